package cliutil

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
)

// PassphraseEnv is the environment variable that holds the passphrase of
// an encrypted private key, for services.
const PassphraseEnv = "AMP_KEY_PASSPHRASE"

// maxPassphraseFile bounds a passphrase file.
const maxPassphraseFile = 4 << 10

// PassphraseFileFlag returns the --passphrase-file flag of every command
// that reads or encrypts a private key.
func PassphraseFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "passphrase-file", Usage: "read the passphrase of an encrypted key from the first line of `FILE` (mode 0600, owned by you or root); otherwise $" + PassphraseEnv + ", otherwise asked on the terminal"}
}

// terminalPassword returns a prompt on the controlling terminal, or nil
// when the process has none.
func terminalPassword() func(string) ([]byte, error) {
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return nil
	}
	return func(prompt string) ([]byte, error) {
		fmt.Fprint(os.Stderr, prompt)
		p, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		return p, err
	}
}

// Passphrase returns the passphrase source of a command, in this order:
// --passphrase-file (its first line; the file must be a regular file that
// only its owner can read), $AMP_KEY_PASSPHRASE, a prompt on the terminal.
// With none of them it fails with key_encrypted and a hint. It is called
// only when a key is encrypted.
func Passphrase(c *cli.Context, env *Env, what string) keyfile.Passphrase {
	return func() ([]byte, error) {
		if path := c.String("passphrase-file"); path != "" {
			return readPassphraseFile(path)
		}
		if env.Getenv != nil {
			if p := env.Getenv(PassphraseEnv); p != "" {
				return []byte(p), nil
			}
		}
		if env.ReadPassword != nil {
			return readTerminal(env, "passphrase for "+what+": ")
		}
		return nil, WithHint(Failf(keyfile.ErrKeyEncrypted, "%s is encrypted and no passphrase was given", what),
			"give --passphrase-file FILE or $"+PassphraseEnv+", or run on a terminal")
	}
}

// NewPassphrase returns the passphrase for a key about to be encrypted:
// from --passphrase-file or $AMP_KEY_PASSPHRASE, or asked twice on the
// terminal. An empty passphrase is refused.
func NewPassphrase(c *cli.Context, env *Env) ([]byte, error) {
	var p []byte
	var err error
	if c.String("passphrase-file") == "" && (env.Getenv == nil || env.Getenv(PassphraseEnv) == "") && env.ReadPassword != nil {
		p, err = askTwice(env)
	} else {
		p, err = Passphrase(c, env, "the new key")()
	}
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, Failf("empty_passphrase", "an empty passphrase encrypts nothing")
	}
	return p, nil
}

// askTwice asks for a new passphrase on the terminal, and again: the two
// must be the same.
func askTwice(env *Env) ([]byte, error) {
	p, err := readTerminal(env, "new passphrase: ")
	if err != nil {
		return nil, err
	}
	again, err := readTerminal(env, "the same passphrase again: ")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(p, again) {
		return nil, Failf("passphrase_mismatch", "the two passphrases differ")
	}
	return p, nil
}

// readTerminal asks env's terminal for a secret after prompt, shown
// through Sanitize: a prompt names a key file by the path given, and a
// file name may carry terminal escapes.
func readTerminal(env *Env, prompt string) ([]byte, error) {
	p, err := env.ReadPassword(Sanitize(prompt))
	if err != nil {
		return nil, Failf("key_unreadable", "cannot read the passphrase from the terminal").WithCause(err)
	}
	return p, nil
}

// KeygenFlags returns the flags both keygen commands share around their
// own: --out first (the new private key file), then own, then --encrypt
// and --passphrase-file, then last.
func KeygenFlags(outUsage string, own []cli.Flag, last ...cli.Flag) []cli.Flag {
	flags := []cli.Flag{&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: outUsage}}
	flags = append(flags, own...)
	flags = append(flags,
		&cli.BoolFlag{Name: "encrypt", Usage: "encrypt the private key under a passphrase (from --passphrase-file, $AMP_KEY_PASSPHRASE, or asked twice on the terminal)"},
		PassphraseFileFlag())
	return append(flags, last...)
}

// NewSigningKey is the start of both keygen commands: it takes no
// arguments and requires --out, settles the passphrase when --encrypt is
// given, and draws a new Ed25519 key from env.Rand. write writes keys to
// --out (mode 0600, never overwriting), encrypted when --encrypt is given.
func NewSigningKey(c *cli.Context, env *Env) (priv ed25519.PrivateKey, write func(keys ...any) error, err error) {
	if err := ExactArgs(c, 0, "no arguments"); err != nil {
		return nil, nil, err
	}
	if err := Require(c, "out"); err != nil {
		return nil, nil, err
	}
	var passphrase []byte
	if c.Bool("encrypt") {
		if passphrase, err = NewPassphrase(c, env); err != nil {
			return nil, nil, err
		}
	} else if c.IsSet("passphrase-file") {
		return nil, nil, Usagef("--passphrase-file needs --encrypt")
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := env.Rand.Read(seed); err != nil {
		return nil, nil, Failf("key_error", "cannot read randomness").WithCause(err)
	}
	out := c.String("out")
	write = func(keys ...any) error { return keyfile.WritePrivate(out, keys...) }
	if passphrase != nil {
		write = func(keys ...any) error { return keyfile.WritePrivateEncrypted(out, passphrase, env.Rand, keys...) }
	}
	return ed25519.NewKeyFromSeed(seed), write, nil
}

func readPassphraseFile(path string) ([]byte, error) {
	f, st, err := keyfile.OpenRegular(path, "passphrase file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Owner-only, judged on the open file: by its mode, or on Windows by
	// its access list (CLI-51).
	if err := keyfile.CheckOwnerOnly(f, st, "the passphrase file"); err != nil {
		return nil, err
	}
	if st.Size() > maxPassphraseFile {
		return nil, Failf("key_unreadable", "the passphrase file is larger than %d bytes", maxPassphraseFile)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, Failf("key_unreadable", "cannot read the passphrase file").WithCause(err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// ReadPrivateKey reads the private key file of flag --key (or another
// flag) with the command's passphrase sources, after OutputNotKey and
// OutputNotPassphraseFile.
func ReadPrivateKey(c *cli.Context, env *Env, path string) (*keyfile.Keys, error) {
	if err := OutputNotKey(c, path); err != nil {
		return nil, err
	}
	if err := OutputNotPassphraseFile(c); err != nil {
		return nil, err
	}
	return keyfile.ReadPrivateWith(path, keyfile.Options{Passphrase: Passphrase(c, env, "key file "+path)})
}

// OutputNotKey refuses, before anything is read or written, a command
// whose output (--out, -o) is the private key file keyPath it reads: the
// same file by os.SameFile, so that a link, a hard link or another spelling
// of the path counts. A writer renames its output into place, and private
// key files are never overwritten (docs/CLI.md §1.11). An output that does
// not exist yet, or stdout (-), is never a key file. Every command that
// reads a private key calls it through ReadPrivateKey
// (docs/SPEC-DECISIONS.md, CLI-27).
func OutputNotKey(c *cli.Context, keyPath string) error {
	if !outputIs(c, keyPath) {
		return nil
	}
	return Usagef("the output file (-o) is the private key file the command reads; private key files are never overwritten: write the output to another file")
}

// OutputNotPassphraseFile refuses, as OutputNotKey does, a command whose
// output (--out, -o) is its --passphrase-file (os.SameFile), whether or
// not the key it reads is encrypted: the writers rename their output
// into place, and the file that holds the passphrase of a key is a secret
// the command never writes (docs/SPEC-DECISIONS.md, CLI-64).
func OutputNotPassphraseFile(c *cli.Context) error {
	pf := c.String("passphrase-file")
	if pf == "" || !outputIs(c, pf) {
		return nil
	}
	return Usagef("the output file (-o) is the --passphrase-file; a passphrase file is never overwritten: write the output to another file")
}

// outputIs reports whether the command's output (--out, -o) exists and
// is the same file as path (os.SameFile: a link, a hard link or another
// spelling counts). No output, stdout (-) or an output that does not
// exist yet is never path.
func outputIs(c *cli.Context, path string) bool {
	out := c.String("out")
	if out == "" || out == "-" {
		return false
	}
	ost, err := os.Stat(out)
	if err != nil {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && os.SameFile(ost, st)
}

// ReadSigningKey is ReadPrivateKey for a file that must hold an Ed25519
// signing key.
func ReadSigningKey(c *cli.Context, env *Env, path string) (ed25519.PrivateKey, error) {
	k, err := ReadPrivateKey(c, env, path)
	if err != nil {
		return nil, err
	}
	if k.Ed25519 == nil {
		return nil, Failf(keyfile.ErrInvalidKeyFile, "the key file holds no ed25519 signing key")
	}
	return k.Ed25519, nil
}

// publicKeyFile reports whether data is written as a public key file: a
// PEM "PUBLIC KEY" block, or DER that reads as a PKIX public key, whatever
// the key inside.
func publicKeyFile(data []byte) bool {
	if block, _ := pem.Decode(data); block != nil {
		return block.Type == "PUBLIC KEY"
	}
	_, err := x509.ParsePKIXPublicKey(data)
	return err == nil
}

// KeyShowCommand is `key show FILE` of both tools: the public key and the
// did:key of a private key file (asking for the passphrase of an encrypted
// one) or of a public key file, PEM or DER.
func KeyShowCommand(env *Env) *cli.Command {
	return Group("key", "show what a key file holds", keyShowCommand(env, keyfile.OpenRegular))
}

// keyOpener opens the key file `key show` reads: keyfile.OpenRegular, or
// a test's stand-in that counts the opens (given to keyShowCommand, never
// swapped in a package variable).
type keyOpener func(path, what string) (*os.File, fs.FileInfo, error)

// keyShown is the key file `key show` read: opened once by its opener,
// with its FileInfo and its bytes. Everything shown, and the private
// key's access check, comes from this one open and this one read
// (docs/SPEC-DECISIONS.md CLI-96).
type keyShown struct {
	f    *os.File
	st   fs.FileInfo
	data []byte
}

// readKeyShown opens path with open and reads it once (keyfile.ReadOpen:
// a regular file of at most 64 KiB, keyfile's errors and names).
func readKeyShown(open keyOpener, path string) (*keyShown, error) {
	const what = "key file"
	f, st, err := open(path, what)
	if err != nil {
		return nil, err
	}
	data, err := keyfile.ReadOpen(f, st, what)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &keyShown{f: f, st: st, data: data}, nil
}

// close closes the file and clears the bytes read: a private key's are
// secret, and the keys parsed from them are copies (CLI-31).
func (k *keyShown) close() {
	clear(k.data)
	k.f.Close()
}

// privateKeys parses the private keys of k, as ReadPrivateKey reads a
// key file, but from k's bytes and k's open file: refused unless only
// its owner may read it (keyfile.CheckOwnerOnly on the file opened), then
// parsed with the command's passphrase sources.
func (k *keyShown) privateKeys(c *cli.Context, env *Env, path string) (*keyfile.Keys, error) {
	if err := OutputNotKey(c, path); err != nil {
		return nil, err
	}
	if err := OutputNotPassphraseFile(c); err != nil {
		return nil, err
	}
	if err := keyfile.CheckOwnerOnly(k.f, k.st, "private key file"); err != nil {
		return nil, err
	}
	return keyfile.ParsePrivateWith(k.data, keyfile.Options{Passphrase: Passphrase(c, env, "key file "+path)})
}

// keyShowDoc is what `key show` prints (--json as is).
type keyShowDoc struct {
	File      string `json:"file"`
	Kind      string `json:"kind"`
	Encrypted bool   `json:"encrypted"`
	DID       string `json:"did,omitempty"`
	PublicKey string `json:"public_key_pem,omitempty"`
	X25519    bool   `json:"x25519"`
}

// showKey reads the key file path once (open) and says what it holds.
func showKey(c *cli.Context, env *Env, open keyOpener, path string) (*keyShowDoc, error) {
	k, err := readKeyShown(open, path)
	if err != nil {
		return nil, err
	}
	defer k.close()
	doc := &keyShowDoc{File: path}
	var pub ed25519.PublicKey
	if p, perr := keyfile.ParsePublicKey(k.data); perr == nil {
		doc.Kind, pub = "public", p
	} else if publicKeyFile(k.data) {
		return nil, perr // a public key file whose key is refused (small order, not Ed25519)
	} else {
		doc.Kind = "private"
		doc.Encrypted = keyfile.IsEncrypted(k.data)
		keys, err := k.privateKeys(c, env, path)
		if err != nil {
			return nil, err
		}
		doc.X25519 = keys.X25519 != nil
		if keys.Ed25519 != nil {
			pub = keys.Ed25519.Public().(ed25519.PublicKey)
		}
	}
	if pub != nil {
		doc.DID = amp.DIDKey(pub)
		doc.PublicKey = string(keyfile.PublicPEM(pub))
	}
	return doc, nil
}

// keyShowCommand is `key show FILE`, reading FILE through open.
func keyShowCommand(env *Env, open keyOpener) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print the public key and did:key of a key file",
		ArgsUsage: "FILE",
		Description: `Reads a private key file (PKCS#8, PEM or DER, encrypted or not; mode 0600)
or a public key file (PKIX, PEM or DER) and prints the Ed25519 public key as
PEM and its did:key, and whether the file also holds an X25519 key
agreement key. An encrypted key's passphrase comes from --passphrase-file,
$AMP_KEY_PASSPHRASE or the terminal. Nothing secret is printed. With --did
it prints the did:key alone, for scripts: did=$(ampagent key show --did FILE).`,
		Flags: []cli.Flag{PassphraseFileFlag(), &cli.BoolFlag{Name: "did", Usage: "print only the did:key (one line)"}, JSONFlag()},
		Action: func(c *cli.Context) error {
			if err := ExactArgs(c, 1, "FILE"); err != nil {
				return err
			}
			path := c.Args().First()
			doc, err := showKey(c, env, open, path)
			if err != nil {
				return err
			}
			if c.Bool("did") && doc.DID == "" {
				return Failf(keyfile.ErrInvalidKeyFile, "the key file holds no ed25519 signing key: it has no did:key")
			}
			if c.Bool("json") {
				return PrintJSON(env.Stdout, doc)
			}
			if c.Bool("did") {
				fmt.Fprintln(env.Stdout, doc.DID)
				return nil
			}
			enc := ""
			if doc.Encrypted {
				enc = ", encrypted"
			}
			fmt.Fprintf(env.Stdout, "%s: %s key%s\n", Sanitize(path), doc.Kind, enc)
			if doc.DID != "" {
				fmt.Fprintf(env.Stdout, "did: %s\n%s", doc.DID, doc.PublicKey)
			} else {
				fmt.Fprintln(env.Stdout, "no ed25519 signing key")
			}
			if doc.X25519 {
				fmt.Fprintln(env.Stdout, "also an x25519 key agreement key")
			}
			return nil
		},
	}
}
