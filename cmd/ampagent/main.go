package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

func main() { cliutil.Main(newApp) }

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
			cliutil.KeyShowCommand(env),
			cardCommand(env),
			mcpCommand(env),
		},
	}
}

// maxDIDDocFile bounds a DID document file (--to-doc, --did-doc).
const maxDIDDocFile = 1 << 20

// jsonFlag is the --json flag every command has.
var jsonFlag = cliutil.JSONFlag()
