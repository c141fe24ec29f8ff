package cliutil

import (
	"reflect"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestNormalize(t *testing.T) {
	app := &cli.App{Name: "x", Commands: []*cli.Command{
		{Name: "verify", Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "trust"}, &cli.BoolFlag{Name: "json"}, &cli.StringFlag{Name: "out", Aliases: []string{"o"}},
		}},
		{Name: "trust", Subcommands: []*cli.Command{{Name: "add", Flags: []cli.Flag{&cli.StringFlag{Name: "db"}}}}},
	}}
	tests := []struct{ in, want []string }{
		{[]string{"x", "verify", "FILE", "--trust", "K"}, []string{"x", "verify", "--trust", "K", "FILE"}},
		{[]string{"x", "verify", "--trust", "K", "FILE"}, []string{"x", "verify", "--trust", "K", "FILE"}},
		{[]string{"x", "verify", "FILE", "--json", "--trust=K", "-o", "OUT"}, []string{"x", "verify", "--json", "--trust=K", "-o", "OUT", "FILE"}},
		{[]string{"x", "verify", "FILE", "--bogus", "A"}, []string{"x", "verify", "--bogus", "FILE", "A"}},
		{[]string{"x", "verify", "-", "--json"}, []string{"x", "verify", "--json", "-"}},
		{[]string{"x", "verify", "--json", "--", "--not-a-flag"}, []string{"x", "verify", "--json", "--", "--not-a-flag"}},
		{[]string{"x", "trust", "add", "PUB", "--db", "D"}, []string{"x", "trust", "add", "--db", "D", "PUB"}},
		{[]string{"x"}, []string{"x"}},
	}
	for _, tt := range tests {
		if got := Normalize(app, tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, want %v", tt.in, got, tt.want)
		}
	}
}
