package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func main() { cliutil.Main(newApp) }

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
			cliutil.KeyShowCommand(env),
		},
	}
}

// jsonFlag is the --json flag every command has.
var jsonFlag = cliutil.JSONFlag()
