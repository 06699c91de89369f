package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/conf"
)

// exitUsage is the exit code of a command line naming no known command.
const exitUsage = 2

// errUnknownCommand is wrapped by the error for a command name that matches
// no command; run exits with exitUsage for it.
var errUnknownCommand = errors.New("unknown command")

// unknownCommand is the error for name, which is none of the commands that
// could follow prefix ("rmq", "rmq admin", ...); it names the closest
// commands of known.
func unknownCommand(prefix, name string, known []string) error {
	hint := ""
	if near := closestNames(name, known, 3); len(near) > 0 {
		hint = "; did you mean " + strings.Join(near, ", ") + "?"
	}
	return fmt.Errorf("%s: %w %q%s (see %s --help)", prefix, errUnknownCommand, name, hint, prefix)
}

// commandNames lists the names of cmds, hidden ones and help excluded.
func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			out = append(out, c.Name)
		}
	}
	return out
}

// dispatchAction is the Action of a command made only of subcommands (and
// of the app): without arguments it shows the help; otherwise the first
// argument named no subcommand, which is a usage error.
func dispatchAction(prefix string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() == 0 {
			if c.Command == nil || c.Command.Name == "" {
				return cli.ShowAppHelp(c)
			}
			return cli.ShowSubcommandHelp(c)
		}
		cmds := c.App.Commands
		if c.Command != nil && len(c.Command.Subcommands) > 0 {
			cmds = c.Command.Subcommands
		}
		return unknownCommand(prefix, c.Args().First(), commandNames(cmds))
	}
}

// closestNames returns up to max of known that are near name: those within
// an edit distance of a third of name's length (at least 2), ignoring case,
// or that contain name or are contained in it; nearest first.
func closestNames(name string, known []string, max int) []string {
	type cand struct {
		name string
		d    int
	}
	lname := strings.ToLower(name)
	limit := len(name) / 3
	if limit < 2 {
		limit = 2
	}
	var cands []cand
	for _, k := range known {
		lk := strings.ToLower(k)
		d := conf.EditDistance(lname, lk)
		if d <= limit || len(lname) >= 3 && (strings.Contains(lk, lname) || strings.Contains(lname, lk)) {
			cands = append(cands, cand{k, d})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cands) && i < max; i++ {
		out = append(out, cands[i].name)
	}
	return out
}
