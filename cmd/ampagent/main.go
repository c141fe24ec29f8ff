package main

import (
	"context"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func main() {
	os.Exit(run(context.Background(), cliutil.OS(), os.Args))
}

// run is main without the process: tests call it with their own Env.
func run(ctx context.Context, env *cliutil.Env, args []string) int {
	return cliutil.Run(ctx, newApp(env), env, args)
}

func newApp(env *cliutil.Env) *cli.App {
	return &cli.App{
		Name:  "ampagent",
		Usage: "AMP agent: serve capabilities from a local registry, query and invoke agents",
		Commands: []*cli.Command{
			demoCommand(env),
			serveCommand(env),
			queryCommand(env),
			invokeCommand(env),
			keygenCommand(env),
			msgCommand(env),
			cliutil.KeyShowCommand(env, jsonFlag),
			cardCommand(env),
			mcpCommand(env),
		},
	}
}

// maxDIDDocFile bounds a DID document file (--to-doc, --did-doc).
const maxDIDDocFile = 1 << 20

// jsonFlag is the --json flag every command has.
var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout (errors too)"}
