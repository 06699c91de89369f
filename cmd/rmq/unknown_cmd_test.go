package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/rmqio/rmq/conf"
)

func TestUnknownCommand(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr []string // substrings of stderr
	}{
		{name: "top level", args: []string{"standalon"}, wantErr: []string{`rmq: unknown command "standalon"`, "did you mean standalone?"}},
		{name: "top level, nothing close", args: []string{"zzzzzz"}, wantErr: []string{`rmq: unknown command "zzzzzz" (see rmq --help)`}},
		{name: "admin typo", args: []string{"admin", "updateTopc"}, wantErr: []string{`rmq admin: unknown command "updateTopc"`, "did you mean updateTopic"}},
		{name: "admin case", args: []string{"admin", "topiclist"}, wantErr: []string{"did you mean topicList"}},
		{name: "bench typo", args: []string{"bench", "prodce"}, wantErr: []string{`rmq bench: unknown command "prodce"`, "did you mean produce"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d (stderr %q)", code, exitUsage, errOut)
			}
			if out != "" {
				t.Fatalf("stdout %q, want nothing", out)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr %q lacks %q", errOut, w)
				}
			}
			if strings.Contains(errOut, "No help topic") {
				t.Fatalf("stderr %q still has urfave's message", errOut)
			}
		})
	}
}

func TestHelpWithoutSubcommand(t *testing.T) {
	for _, args := range [][]string{nil, {"admin"}, {"bench"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "USAGE:") {
			t.Fatalf("rmq %v: exit %d, stdout %q, stderr %q; want the help, exit 0", args, code, out, errOut)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	_, want, _ := runCLI(t, "version")
	if !strings.HasPrefix(want, "rmq ") {
		t.Fatalf("rmq version printed %q", want)
	}
	for _, flag := range []string{"--version", "-v"} {
		code, out, errOut := runCLI(t, flag)
		if code != 0 || out != want {
			t.Fatalf("rmq %s: exit %d, stdout %q, stderr %q; want exit 0, %q", flag, code, out, errOut, want)
		}
	}
}

func TestClosestNames(t *testing.T) {
	known := []string{"queryMsgById", "queryMsgByKey", "queryMsgByUniqueKey", "topicList", "topicRoute", "updateTopic"}
	tests := []struct {
		name string
		want []string
	}{
		{name: "queryMsgByUniqKey", want: []string{"queryMsgByUniqueKey", "queryMsgByKey"}},
		{name: "topicroute", want: []string{"topicRoute"}},
		{name: "topic", want: []string{"topicList", "topicRoute", "updateTopic"}},
		{name: "xyz", want: nil},
	}
	for _, tc := range tests {
		if got := closestNames(tc.name, known, 3); !slices.Equal(got, tc.want) {
			t.Errorf("closestNames(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"updateTopc", "updateTopic", 1}} {
		if got := conf.EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("conf.EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
