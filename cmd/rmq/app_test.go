package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func init() {
	registerCommand(func(a *action) *cli.Command {
		return &cli.Command{
			Name:   "test-echo",
			Hidden: true,
			Flags:  []cli.Flag{&cli.StringFlag{Name: flagLogLevel, Value: "info"}},
			Action: func(c *cli.Context) error {
				if _, err := a.logger(c); err != nil {
					return err
				}
				if c.Args().First() == "fail" {
					return fmt.Errorf("asked to fail")
				}
				fmt.Fprintln(a.stdout, "echo", c.Args().First())
				return nil
			},
		}
	})
}

func TestRegisteredCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "runs with the process outputs", args: []string{"test-echo", "hi"}, wantCode: 0, wantOut: "echo hi\n"},
		{name: "errors exit 1", args: []string{"test-echo", "fail"}, wantCode: 1, wantErr: "rmq: asked to fail"},
		{name: "shared log level check", args: []string{"test-echo", "--log-level", "x", "hi"}, wantCode: 1, wantErr: `bad --log-level "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != tt.wantCode || out != tt.wantOut || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d out %q err %q; want exit %d out %q err containing %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
	// version stays the last command, after registered ones.
	app := newApp(t.Context(), func() {}, nil, nil)
	if last := app.Commands[len(app.Commands)-1].Name; last != "version" {
		t.Fatalf("last command %q, want version", last)
	}
}
