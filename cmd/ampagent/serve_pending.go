package main

// Temporary: replaced by serve.go.

import (
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func serveCommand(*cliutil.Env) *cli.Command {
	return &cli.Command{Name: "serve", Hidden: true, Action: func(*cli.Context) error {
		return cliutil.Failf("not_built", "this command is being built")
	}}
}
