package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

func invokeCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "invoke",
		Usage:     "invoke a capability of an agent (CAP_INVOKE)",
		ArgsUsage: "URL",
		Description: `Sends a signed (with --encrypt also authcrypt-encrypted) CAP_INVOKE to the
agent at URL (http://, https://, amps:// or amp://, as for 'ampagent
query'), verifies the reply (the provider's signature, sender,
recipient and reply_to = the request's id) and prints the CAP_RESULT.

The target is either --id NAME:VERSION, or --capability NAME with exactly
one of --version V (that exact version) or negotiation hints: --prefer V,
--accept V,V,... (in order of preference) and --range R, at least one of
them; the provider picks the version (RFC 004 §6.3).

--params is the input as JSON text, or @FILE to read it from a file (@- for
stdin). It is sent as CBOR; the provider validates it against the input
schema of the version it runs. With --stream-params the params travel
first as a stream (chunks of 256 KiB), which the provider acknowledges once
their SHA-256 matched, and the invocation then names that stream: for
params larger than one message the provider accepts (the provider must take
params streams: ampagent serve --stream-dir).

A refusal (an ERROR reply: 3001 unauthorized, 4002 unknown capability, 4004
schema violation, 5002 unavailable, ...), a failed invocation (CAP_RESULT
with status error) and a reply that does not verify all exit 1 with the AMP
code. Retryable failures (delivery, 5xxx) are retried a few times with the
same message.`,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "id", Usage: "capability `ID` to run (name:version)"},
			&cli.StringFlag{Name: "capability", Usage: "capability `NAME` to run, with --version or negotiation hints"},
			&cli.StringFlag{Name: "version", Usage: "run exactly `VERSION` of --capability"},
			&cli.StringFlag{Name: "prefer", Usage: "negotiation: preferred `VERSION`"},
			&cli.StringSliceFlag{Name: "accept", Usage: "negotiation: acceptable `VERSIONS`, in order (comma-separated or repeated)"},
			&cli.StringFlag{Name: "range", Usage: "negotiation: the highest version in `RANGE`"},
			&cli.StringFlag{Name: "params", Usage: "input as `JSON` text, or @FILE (@- for stdin) (required)"},
			&cli.Uint64Flag{Name: "timeout-ms", Usage: "ask the provider to give up after `MS` milliseconds (default: not sent, the provider's default applies)"},
			&cli.BoolFlag{Name: "encrypt", Usage: "encrypt the request (authcrypt); the reply comes back encrypted"},
			&cli.BoolFlag{Name: "stream-params", Usage: "send the params as a stream first, then the invocation naming it (params larger than one message)"},
		),
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 1, "the agent URL"); err != nil {
				return err
			}
			inv, target, err := invokeFromFlags(c)
			if err != nil {
				return err
			}
			var extra time.Duration
			if inv.TimeoutMS != nil {
				extra = time.Duration(*inv.TimeoutMS) * time.Millisecond
			}
			// Usage mistakes before any file is read.
			if err := cliutil.Require(c, "key", "to"); err != nil {
				return err
			}
			params, err := readParams(env, c)
			if err != nil {
				return err
			}
			inv.Params = params
			s, err := dial(env, c, c.Bool("encrypt"), extra)
			if err != nil {
				return err
			}
			defer s.close()
			var res *capability.Result
			var ex *client.Exchange
			if c.Bool("stream-params") {
				res, ex, err = s.client.InvokeLarge(s.ctx, inv, params, 0)
			} else {
				res, ex, err = s.client.Invoke(s.ctx, inv)
			}
			if err != nil {
				return withDetailsHint(s.explain(resultErrorName(res, err)))
			}
			result, err := amp.JSONValue(res.Result)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"status": res.Status, "result": result, "target": target,
					"provider": s.peer, "request_id": ex.Request.ID.String(), "reply_id": ex.Reply.ID.String(),
					"verified": true, "encrypted": ex.Reply.Encrypted(), "attempts": ex.Attempts,
					"streamed_params": c.Bool("stream-params"),
				})
			}
			how := "signature and reply_to verified"
			if ex.Reply.Encrypted() {
				how += ", encrypted"
			}
			fmt.Fprintf(env.Stdout, "CAP_RESULT %s for %s from %s (%s)\nrequest %s, reply %s\n",
				cliutil.Sanitize(res.Status), cliutil.Sanitize(target), cliutil.Sanitize(s.peer), how, ex.Request.ID, ex.Reply.ID)
			return cliutil.PrintJSON(env.Stdout, result)
		},
	}
}

// invokeFromFlags builds the CAP_INVOKE body (without params) from the
// target flags, and names the target for the output. Every mistake is a
// usage error.
func invokeFromFlags(c *cli.Context) (capability.Invoke, string, error) {
	var inv capability.Invoke
	hints := c.IsSet("prefer") || c.IsSet("accept") || c.IsSet("range")
	switch {
	case c.IsSet("id") && (c.IsSet("capability") || c.IsSet("version") || hints):
		return inv, "", cliutil.Usagef("--id names the version: do not combine it with --capability, --version, --prefer, --accept or --range")
	case c.IsSet("id"):
		if err := setFlag(c, "id", &inv.ID, capability.ParseID); err != nil {
			return inv, "", err
		}
		return inv, inv.ID.String(), finishInvoke(c, &inv)
	case !c.IsSet("capability"):
		return inv, "", cliutil.WithHint(cliutil.Usagef("nothing to invoke"), "give --id NAME:VERSION, or --capability NAME with --version or --prefer/--accept/--range")
	}
	var err error
	if inv.Capability, err = capabilityFlag(c); err != nil {
		return inv, "", err
	}
	switch {
	case c.IsSet("version") && hints:
		return inv, "", cliutil.Usagef("give --version or negotiation hints (--prefer, --accept, --range), not both")
	case c.IsSet("version"):
		if err := setFlag(c, "version", &inv.Version, capability.ParseVersion); err != nil {
			return inv, "", err
		}
		return inv, inv.Capability + ":" + inv.Version.String(), finishInvoke(c, &inv)
	case !hints:
		return inv, "", cliutil.WithHint(cliutil.Usagef("--capability needs a version"), "give --version V, or let the provider choose with --prefer V, --accept V,V and/or --range R")
	}
	h := &capability.NegotiateHints{}
	if err := setFlag(c, "prefer", &h.Preferred, capability.ParseVersion); err != nil {
		return inv, "", err
	}
	if c.IsSet("accept") {
		h.Acceptable = []capability.Version{}
		for _, s := range c.StringSlice("accept") {
			v, err := capability.ParseVersion(strings.TrimSpace(s))
			if err != nil {
				return inv, "", flagError("accept", err)
			}
			h.Acceptable = append(h.Acceptable, v)
		}
		if len(h.Acceptable) > capability.MaxAcceptable {
			return inv, "", cliutil.Usagef("--accept takes at most %d versions", capability.MaxAcceptable)
		}
	}
	if err := setFlag(c, "range", &h.Range, capability.ParseRange); err != nil {
		return inv, "", err
	}
	inv.Negotiate = h
	return inv, inv.Capability + " (negotiated)", finishInvoke(c, &inv)
}

// finishInvoke reads the flags every form shares, except the params.
func finishInvoke(c *cli.Context, inv *capability.Invoke) error {
	if err := cliutil.Require(c, "params"); err != nil {
		return err
	}
	var err error
	inv.TimeoutMS, err = countFlag(c, "timeout-ms", uint64(24*time.Hour/time.Millisecond))
	return err
}

// readParams turns --params (JSON text, @FILE or @-) into CBOR. JSON that
// is not valid, or has no CBOR form, is a usage error; a file that cannot be
// read is a failure.
func readParams(env *cliutil.Env, c *cli.Context) (cbor.RawMessage, error) {
	p := c.String("params")
	data := []byte(p)
	if name, ok := strings.CutPrefix(p, "@"); ok {
		if name == "" {
			return nil, cliutil.Usagef("--params @FILE needs a file name (or @- for stdin)")
		}
		var err error
		if data, err = cliutil.ReadInput(env, name, offlineschema.MaxJSONSize, false); err != nil {
			return nil, err
		}
	}
	v, err := offlineschema.ValueFromJSON(data)
	if amp.NameOf(err) == offlineschema.ErrInvalidJSON {
		return nil, cliutil.Usagef("--params is not valid JSON")
	} else if err != nil {
		return nil, cliutil.Usagef("--params is not usable JSON: %s", amp.AsError(err).Message)
	}
	out, err := offlineschema.ToCBOR(v)
	if err != nil {
		return nil, cliutil.Usagef("--params is not usable JSON: %s", amp.AsError(err).Message)
	}
	return out, nil
}

// maxProviderErrorName bounds the error name a provider's CAP_RESULT may
// give the CLI's error code.
const maxProviderErrorName = 64

// ProviderErrorName is the Details of a CAP_RESULT error whose name the
// CLI did not keep: the provider's name (bounded) and its details.
type ProviderErrorName struct {
	ProviderName string          `json:"provider_name"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// resultErrorName keeps the name a provider gave a CAP_RESULT error (res,
// err as Invoke returns them) only when it is a bounded snake_case name
// that is none of the program's own names, nor the name of another AMP
// code than the error's; otherwise the error takes its code's name and the
// provider's name moves to the details (ProviderErrorName). The name
// judged is res.Error.Name, the provider's as sent: the client already
// gave the error its code's name for one amp.ValidErrName refuses
// (TRANSPORT-18), which would pass here and lose the provider's name;
// an empty one is the code's name, as the client gives it. Any other
// error is returned as it is.
func resultErrorName(res *capability.Result, err error) error {
	var e *amp.Error
	if res == nil || res.Status != capability.StatusError || res.Error == nil || !errors.As(err, &e) {
		return err
	}
	sent := amp.ErrName(res.Error.Name)
	if sent == "" {
		sent = e.Name
	}
	if providerNameKept(sent, e.Code) {
		return err
	}
	name := string(sent)
	if len(name) > maxProviderErrorName {
		name = strings.ToValidUTF8(name[:maxProviderErrorName], "")
	}
	d := ProviderErrorName{ProviderName: name}
	if raw, ok := e.Details.(cbor.RawMessage); ok {
		if j, jerr := amp.JSONValue(raw); jerr == nil {
			d.Details = j
		}
	}
	return &amp.Error{Code: e.Code, Name: amp.ErrName(e.Code.SnakeName()), Message: e.Message, Details: d, Final: e.Final}
}

// providerNameKept reports whether a provider's error name n, for code,
// stays the CLI's error code.
func providerNameKept(n amp.ErrName, code amp.Code) bool {
	// amp.ValidErrName: 1 to maxProviderErrorName of [a-z0-9_]; and a
	// letter first.
	if !amp.ValidErrName(string(n)) || ownErrorNames[n] || n[0] < 'a' || n[0] > 'z' {
		return false
	}
	for _, c := range amp.Codes() {
		if c != code && amp.ErrName(c.SnakeName()) == n {
			return false
		}
	}
	return true
}

// withDetailsHint adds the details a provider sent with an error (for a
// schema violation: where, and which keyword) as a hint for people; the
// --json error document carries them as "details".
func withDetailsHint(err error) error {
	var e *amp.Error
	if !errors.As(err, &e) || e.Details == nil {
		return err
	}
	raw, ok := e.Details.(cbor.RawMessage)
	if pn, named := e.Details.(ProviderErrorName); named && len(pn.Details) > 0 {
		return cliutil.WithHint(err, "details from the provider: "+string(pn.Details))
	}
	if !ok {
		return err
	}
	if vs := violationsText(raw); vs != "" {
		return cliutil.WithHint(err, "the provider reports: "+vs)
	}
	j, jerr := amp.JSONValue(raw)
	if jerr != nil {
		return err
	}
	return cliutil.WithHint(err, "details from the provider: "+string(j))
}

// decodeViolations reads schema-violation details, or returns nil.
func decodeViolations(raw []byte) []offlineschema.Violation {
	var vs []offlineschema.Violation
	if err := amp.Unmarshal(raw, &vs); err != nil {
		return nil
	}
	return vs
}

// violationsText is "/target: required; /text: minLength", or "".
func violationsText(raw []byte) string {
	vs := decodeViolations(raw)
	s := make([]string, 0, len(vs))
	for _, v := range vs {
		if v.Keyword == "" {
			return ""
		}
		loc := v.InstanceLocation
		if loc == "" {
			loc = "(the whole value)"
		}
		s = append(s, loc+": "+v.Keyword)
	}
	return strings.Join(s, "; ")
}
