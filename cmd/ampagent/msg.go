package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
)

func msgCommand(env *cliutil.Env) *cli.Command {
	return cliutil.Group("msg", "inspect or verify one AMP message",
		msgInspectCommand(env), msgVerifyCommand(env))
}

var hexFlag = &cli.BoolFlag{Name: "hex", Usage: "read hex text instead of raw CBOR bytes"}

func readMessage(env *cliutil.Env, c *cli.Context) ([]byte, error) {
	if err := cliutil.ExactArgs(c, 1, "one message FILE (or - for stdin)"); err != nil {
		return nil, err
	}
	return cliutil.ReadInput(env, c.Args().First(), amp.DefaultMaxMessageSize, c.Bool("hex"))
}

func msgInspectCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "print a message as JSON, without verifying anything",
		ArgsUsage: "FILE|-",
		Description: `Prints the envelope and the decoded body. Envelope byte fields are hex;
typ comes with its name; in the body, byte strings are {"bytes":"<hex>"},
CBOR tags are {"tag":N,"value":...} and maps with non-text keys are
{"map":[{"key":...,"value":...}]}. Nothing is verified: use 'msg verify'.`,
		Flags: []cli.Flag{hexFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			data, err := readMessage(env, c)
			if err != nil {
				return err
			}
			in, err := amp.Limits{}.Inspect(data)
			if err != nil {
				return err
			}
			// JSON with or without --json: the message is anyone's.
			return cliutil.PrintJSON(env.Stdout, in)
		},
	}
}

// staticDIDs resolves exactly one DID document.
type staticDIDs struct{ doc *amp.DIDDocument }

func (s staticDIDs) ResolveDID(_ context.Context, did string) (*amp.DIDDocument, error) {
	if s.doc != nil && s.doc.ID == did {
		return s.doc, nil
	}
	return nil, errors.New("no document for this did")
}

func msgVerifyCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "validate a message as a recipient would (RFC 001 §8), at --now",
		ArgsUsage: "FILE|-",
		Description: `Runs the full receive validation: shape, version, type, required fields,
timestamps, sender keys, decryption, signature. Exit 0 when the message is
valid at --now (default: the real clock), otherwise 1 with the AMP code.

The sender's Ed25519 key comes from exactly one of --pub (hex), --pub-file
(PEM) or --did-doc (a DID document whose id is the sender's DID); a did:key
sender needs none. For an encrypted message the recipient's X25519 private
key comes from --x25519-key (a PEM file, e.g. an ampagent key file) or
--x25519-seed (hex), and the sender's X25519 public key from --did-doc or
--sender-x25519 (hex).`,
		Flags: []cli.Flag{
			hexFlag,
			&cli.StringFlag{Name: "pub", Usage: "sender's Ed25519 public key, 32 bytes of `HEX`"},
			&cli.StringFlag{Name: "pub-file", Usage: "sender's Ed25519 public key `PEM` file"},
			&cli.StringFlag{Name: "did-doc", Usage: "sender's DID document `FILE` (JSON)"},
			&cli.Int64Flag{Name: "now", Usage: "evaluate at this Unix time in `MS` (default: now)"},
			&cli.StringFlag{Name: "x25519-key", Usage: "recipient's X25519 private key `FILE` (PKCS#8, PEM or DER)"},
			cliutil.PassphraseFileFlag(),
			&cli.StringFlag{Name: "x25519-seed", Usage: "recipient's X25519 private key, 32 bytes of `HEX`"},
			&cli.StringFlag{Name: "sender-x25519", Usage: "sender's X25519 public key, 32 bytes of `HEX`"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			data, err := readMessage(env, c)
			if err != nil {
				return err
			}
			// The sender DID is needed to build its document from a bare key.
			head, err := amp.Limits{}.Inspect(data)
			if err != nil {
				return err
			}
			doc, err := senderDocument(c, head.From)
			if err != nil {
				return err
			}
			cfg := amp.ReceiverConfig{Now: env.Now}
			if c.IsSet("now") {
				ms := c.Int64("now")
				cfg.Now = func() time.Time { return time.UnixMilli(ms) }
			}
			if doc != nil {
				cfg.DIDs = staticDIDs{doc}
			}
			if k, err := recipientKey(c, env); err != nil {
				return err
			} else if k != nil {
				cfg.AgreementKeys = []*amp.AgreementKey{k}
			}
			r, err := amp.NewReceiver(cfg)
			if err != nil {
				return err
			}
			m, err := r.Receive(c.Context, data)
			if err != nil {
				return err
			}
			body, err := amp.JSONValue(m.Body)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return cliutil.PrintJSON(env.Stdout, map[string]any{
					"valid": true, "id": m.ID.String(), "typ": uint64(m.Type), "typ_name": m.Type.Name(),
					"from": m.From, "encrypted": m.Encrypted(), "body": body,
				})
			}
			fmt.Fprintf(env.Stdout, "valid: %s id %s from %s", m.Type, m.ID, cliutil.Sanitize(m.From))
			if m.Encrypted() {
				fmt.Fprint(env.Stdout, " (encrypted)")
			}
			fmt.Fprintf(env.Stdout, "\nbody: %s\n", cliutil.SanitizeJSON(body))
			return nil
		},
	}
}

// senderDocument builds the sender's DID document from the key flags, or
// returns nil to let did:key resolve by itself.
func senderDocument(c *cli.Context, from string) (*amp.DIDDocument, error) {
	n := 0
	for _, f := range []string{"pub", "pub-file", "did-doc"} {
		if c.IsSet(f) {
			n++
		}
	}
	if n > 1 {
		return nil, cliutil.Usagef("give at most one of --pub, --pub-file and --did-doc")
	}
	if c.IsSet("did-doc") {
		if c.IsSet("sender-x25519") {
			return nil, cliutil.Usagef("--sender-x25519 goes with --pub or --pub-file; a DID document carries its own key agreement key")
		}
		data, err := cliutil.ReadFile(c.String("did-doc"), maxDIDDocFile, "did document")
		if err != nil {
			return nil, err
		}
		return amp.ParseDIDDocument(data)
	}
	var pub ed25519.PublicKey
	switch {
	case c.IsSet("pub"):
		b, err := cliutil.DecodeHexN("pub", c.String("pub"), ed25519.PublicKeySize)
		if err != nil {
			return nil, err
		}
		pub = b
	case c.IsSet("pub-file"):
		var err error
		if pub, err = keyfile.ParsePublic(c.String("pub-file")); err != nil {
			return nil, err
		}
	default:
		if !strings.HasPrefix(from, "did:key:") {
			return nil, cliutil.WithHint(cliutil.Usagef("the sender is not a did:key: its key is needed"), "give --pub HEX, --pub-file PEM or --did-doc FILE")
		}
		return nil, nil
	}
	if !amp.ValidDID(from) {
		return nil, amp.Named(amp.CodeInvalidMessage, "invalid_did", "field \"from\" is not a did")
	}
	// A document for the bare DID with the given key as its assertion key,
	// named by the fragment of `from` when it has one.
	did := amp.BareDID(from)
	id := did + "#cli-key"
	if i := strings.IndexByte(from, '#'); i >= 0 {
		id = from
	}
	doc := &amp.DIDDocument{ID: did,
		Methods:         []amp.VerificationMethod{{ID: id, Type: "Multikey", KeyType: amp.KeyEd25519, PublicKey: pub}},
		AssertionMethod: []string{id}}
	if c.IsSet("sender-x25519") {
		x, err := cliutil.DecodeHexN("sender-x25519", c.String("sender-x25519"), 32)
		if err != nil {
			return nil, err
		}
		doc.Methods = append(doc.Methods, amp.VerificationMethod{ID: did + "#cli-x25519", Type: "Multikey", KeyType: amp.KeyX25519, PublicKey: x})
		doc.KeyAgreement = []string{did + "#cli-x25519"}
	}
	return doc, nil
}

// recipientKey reads the recipient's X25519 private key, if given.
func recipientKey(c *cli.Context, env *cliutil.Env) (*amp.AgreementKey, error) {
	switch {
	case c.IsSet("x25519-key") && c.IsSet("x25519-seed"):
		return nil, cliutil.Usagef("give --x25519-key or --x25519-seed, not both")
	case c.IsSet("x25519-seed"):
		b, err := cliutil.DecodeHexN("x25519-seed", c.String("x25519-seed"), 32)
		if err != nil {
			return nil, err
		}
		var p [32]byte
		copy(p[:], b)
		return amp.NewAgreementKey(p)
	case c.IsSet("x25519-key"):
		keys, err := cliutil.ReadPrivateKey(c, env, c.String("x25519-key"))
		if err != nil {
			return nil, err
		}
		// Identity uses the file's X25519 key, or derives it from a lone
		// Ed25519 key as did:key does.
		id, err := keys.Identity("")
		if err != nil {
			return nil, err
		}
		return id.Agreement, nil
	}
	return nil, nil
}
