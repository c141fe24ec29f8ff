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
		Name:  "ampbundle",
		Usage: "signed capability-schema bundles for offline AMP agents",
		Commands: []*cli.Command{
			keygenCommand(env),
			buildCommand(env),
			signCommand(env),
			revokeCommand(env),
			rotateCommand(env),
			heartbeatCommand(env),
			verifyCommand(env),
			inspectCommand(env),
			compatCommand(env),
			trustCommand(env),
			importCommand(env),
			lsCommand(env),
			rmCommand(env),
			exportCommand(env),
			splitCommand(env),
			joinCommand(env),
			serveCommand(env),
			syncCommand(env),
			pushCommand(env),
			pullCommand(env),
			checkCommand(env),
			resolveCommand(env),
			auditCommand(env),
			receiptCommand(env),
			cliutil.KeyShowCommand(env, jsonFlag),
		},
	}
}

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout (errors too)"}
