package main

// Temporary: replaced by query.go, invoke.go and demo.go.

import (
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func pending(name string) *cli.Command {
	return &cli.Command{Name: name, Hidden: true, Action: func(*cli.Context) error {
		return cliutil.Failf("not_built", "this command is being built")
	}}
}

func demoCommand(*cliutil.Env) *cli.Command  { return pending("demo") }
func serveCommand(*cliutil.Env) *cli.Command { return pending("serve") }
