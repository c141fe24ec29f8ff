package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

func buildCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "build",
		Usage:     "build a signed bundle from a source folder",
		ArgsUsage: "SRC",
		Description: `Reads the source folder SRC (layout: docs/FORMAT.md §8), checks every
descriptor, JSON Schema ($refs must resolve inside the bundle) and DID
document, and writes the signed bundle to FILE (atomically: a temporary file
renamed into place; with -o - the bundle goes to stdout once complete, the
summary to stderr). Same source + same key + same created time = identical
bytes. created_at comes from --created, else SOURCE_DATE_EPOCH, else now.

Schemas get a linear check that refuses exactly what compiling them would
(docs/SPEC-DECISIONS.md SCHEMA-2): it compiles with the JSON Schema library
only the schemas it cannot vouch for; --full-schema-check compiles every
schema. Schemas are checked --workers at a time (default: one per
processor); the bundle and the first error reported are the same for any
number.

With --base OLD.ampb (or --base-from-db DB, the version of the same
bundle_id installed there) it writes a delta bundle (docs/FORMAT.md §12):
the full bundle's signed manifest, a signed header naming the exact base,
and only the artifacts the base does not carry. 'ampbundle import' of the
delta into a store holding that base installs exactly the full bundle, and
'ampbundle export' then writes the full bundle byte for byte.`,
		Flags: []cli.Flag{
			cliutil.PassphraseFileFlag(),
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "bundle `FILE` to write, - for stdout (required)"},
			&cli.StringSliceFlag{Name: "key", Usage: "publisher private key `PEM` file (required, mode 0600; repeatable: one signature per key, co-signing)"},
			&cli.StringFlag{Name: "created", Usage: "created_at as an RFC 3339 `TIME`"},
			&cli.StringFlag{Name: "hash", Value: capability.HashSHA256, Usage: "artifact hash `ALG`: sha-256 or sha-512"},
			&cli.StringFlag{Name: "base", Usage: "write a delta against the base bundle `OLD.ampb`"},
			&cli.StringFlag{Name: "base-from-db", Usage: "write a delta against the version installed in the store `DB`"},
			&cli.BoolFlag{Name: "full-schema-check", Usage: "compile every JSON Schema, instead of only those the linear check cannot vouch for (slower for large schemas)"},
			&cli.IntFlag{Name: "workers", Usage: "check up to `N` schemas at once, within a heap budget of 4 × the largest schema × N plus 16 MiB (each schema charged a bound of its parse and compile before they are allocated; one charged more than the whole budget is checked alone); the output is the same for every N (default: one per processor, GOMAXPROCS)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error { return runBuild(env, c) },
	}
}

// runBuild is 'ampbundle build': the flags and the source folder are
// checked and the keys read before the source is loaded; the bundle (or
// the delta against its base) is written atomically, then reported.
func runBuild(env *cliutil.Env, c *cli.Context) error {
	if err := checkBuildFlags(c); err != nil {
		return err
	}
	if err := checkOut(c.String("out")); err != nil {
		return err
	}
	if err := sourceFolder(c.Args().First()); err != nil {
		return err
	}
	created, err := createdAt(env, c)
	if err != nil {
		return err
	}
	keys, err := signingKeys(c, env, c.StringSlice("key"))
	if err != nil {
		return err
	}
	phase, phasesDone := cliutil.Phases(env, c.Bool("json"))
	d, err := bundlebuild.LoadSource(c.Args().First(), bundlebuild.SourceOptions{
		HashAlg: c.String("hash"), CreatedAt: created, Signer: keys[0].Public().(ed25519.PublicKey),
		Progress: phase, FullSchemaCheck: c.Bool("full-schema-check"), Workers: c.Int("workers"), LimitMemory: true})
	phasesDone()
	if err != nil {
		return err
	}
	var total int64
	for _, s := range d.Artifacts {
		total += s.Size
	}
	baseSigned, err := buildBase(env, c, d.BundleID)
	if err != nil {
		return err
	}
	prog := cliutil.NewProgress(env, c.Bool("json"), "building", total)
	out := c.String("out")
	var delta *bundle.Delta
	m, size, sum, err := writeBuilt(env, out, func(w io.Writer) (*bundle.Manifest, error) {
		if baseSigned != nil {
			m, dh, err := bundle.WriteDelta(w, d, keys, baseSigned, bundle.WriteOptions{Progress: prog.Update})
			delta = dh
			return m, err
		}
		return bundle.Write(w, d, keys, bundle.WriteOptions{Progress: prog.Update})
	})
	prog.Done()
	if err != nil {
		return err
	}
	return reportBuilt(env, c, builtBundle{out: out, m: m, delta: delta, size: size, sum: sum, keys: keys})
}

// checkBuildFlags refuses flags that cannot make a bundle, before any
// file is read.
func checkBuildFlags(c *cli.Context) error {
	if err := cliutil.ExactArgs(c, 1, "the source folder SRC"); err != nil {
		return err
	}
	if err := cliutil.Require(c, "out", "key"); err != nil {
		return err
	}
	if c.IsSet("base") && c.IsSet("base-from-db") {
		return cliutil.Usagef("give --base or --base-from-db, not both")
	}
	if h := c.String("hash"); h != capability.HashSHA256 && h != capability.HashSHA512 {
		return cliutil.Usagef("--hash must be sha-256 or sha-512")
	}
	if n := c.Int("workers"); n < 0 || n > 1024 {
		return cliutil.Usagef("--workers must be from 0 (one per processor) to 1024")
	}
	return nil
}

// builtBundle is what build wrote: the file (out), its manifest, the
// delta header when it is a delta, its size and SHA-256, and the keys
// that signed it.
type builtBundle struct {
	out   string
	m     *bundle.Manifest
	delta *bundle.Delta
	size  int64
	sum   string
	keys  []ed25519.PrivateKey
}

// reportBuilt writes the summary of a build, as JSON or for people, to
// stdout, or to stderr when the bundle itself went to stdout.
func reportBuilt(env *cliutil.Env, c *cli.Context, b builtBundle) error {
	m, delta, out := b.m, b.delta, b.out
	if c.Bool("json") {
		v := map[string]any{
			"file": out, "size": b.size, "sha256": b.sum,
			"bundle": summarize("", m, keyInfos(b.keys), false),
		}
		if delta != nil {
			v["delta"] = catalog.DeltaOf(m, delta)
		}
		return cliutil.PrintJSON(summaryTo(env, out), v)
	}
	kind := "wrote"
	if delta != nil {
		kind = "wrote delta"
	}
	fmt.Fprintf(summaryTo(env, out), "%s %s: %s version %d, %d artifacts, %d capabilities, %d bytes, sha256 %s\n",
		kind, cliutil.Sanitize(outputName(out)), cliutil.Sanitize(m.BundleID), m.Version, len(m.Artifacts), len(m.Capabilities), b.size, b.sum)
	if delta != nil {
		dv := catalog.DeltaOf(m, delta)
		fmt.Fprintf(summaryTo(env, out), "  base          %s\n  carries       %d artifacts; %d (%d bytes) come from the base\n",
			cliutil.Sanitize(dv.Base), len(m.Artifacts)-dv.Omitted, dv.Omitted, dv.OmittedBytes)
	}
	return nil
}

// createdAt picks the bundle's created_at: a statement's
// (statementCreated), but $SOURCE_DATE_EPOCH before now.
func createdAt(env *cliutil.Env, c *cli.Context) (time.Time, error) {
	epoch := ""
	if !c.IsSet("created") {
		epoch = env.Getenv("SOURCE_DATE_EPOCH")
	}
	if epoch == "" {
		return statementCreated(c, env)
	}
	n, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, cliutil.Usagef("SOURCE_DATE_EPOCH must be a whole number of seconds")
	}
	return time.Unix(n, 0).UTC(), nil
}

// sourceFolder refuses a SRC that is a file (a bundle given where its
// source folder belongs), naming what build wants, before any key is read.
func sourceFolder(src string) error {
	if src == "" {
		return cliutil.Usagef("SRC is empty: name the source folder (one holding bundle.json)")
	}
	st, err := os.Stat(src)
	if err != nil {
		return nil // LoadSource names a missing folder
	}
	if st.IsDir() {
		// bundle.json first: a folder without it is not a source folder,
		// whatever else is wrong in it (a large file read before it).
		if _, err := os.Lstat(filepath.Join(src, "bundle.json")); errors.Is(err, fs.ErrNotExist) {
			return cliutil.Failf(bundle.ErrSource, "bundle.json: is missing from %s", src)
		}
		return nil
	}
	return cliutil.WithHint(cliutil.Failf("invalid_source", "%s is a file; build wants a source folder (one holding bundle.json)", src),
		"to check or read a bundle file, use verify or inspect")
}

// signingKeys reads the --key files: at least one, each key once.
func signingKeys(c *cli.Context, env *cliutil.Env, paths []string) ([]ed25519.PrivateKey, error) {
	if len(paths) == 0 {
		return nil, cliutil.Usagef("missing required flag --key")
	}
	if len(paths) > bundle.MaxSignatures {
		return nil, cliutil.Usagef("--key given %d times; a bundle carries at most %d signatures", len(paths), bundle.MaxSignatures)
	}
	var keys []ed25519.PrivateKey
	seen := map[string]bool{}
	for _, p := range paths {
		k, err := cliutil.ReadSigningKey(c, env, p)
		if err != nil {
			return nil, err
		}
		did := string(bundle.KeyID(k.Public().(ed25519.PublicKey)))
		if seen[did] {
			return nil, cliutil.Usagef("two --key files hold the same key (%s); each key signs once", did)
		}
		seen[did] = true
		keys = append(keys, k)
	}
	return keys, nil
}

// keyInfos lists the signatures the keys make, in file (kid) order.
func keyInfos(keys []ed25519.PrivateKey) []catalog.ManifestSignature {
	var out []catalog.ManifestSignature
	for _, k := range keys {
		out = append(out, catalog.ManifestSignature{KID: string(bundle.KeyID(k.Public().(ed25519.PublicKey)))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KID < out[j].KID })
	return out
}

// writeAtomic writes a file through write to a temporary file next to out
// and renames it into place, so that out is either the old file or the
// complete new one, judged again just before the rename (stillFile). An
// out named through one of this process's descriptors, or /dev/null
// (judgeOut), gets the complete file from a temporary file in the system's
// temporary folder (copyToStream); any other out that is not a regular
// file is refused before anything is written. The callers judge out
// themselves before any key is read (docs/SPEC-DECISIONS.md CLI-105).
func writeAtomic(out string, write func(io.Writer) (*bundle.Manifest, error)) (*bundle.Manifest, int64, string, error) {
	k, err := judgeOut(out)
	if err != nil {
		return nil, 0, "", err
	}
	stream := k != regfile.OutputFile
	dir := filepath.Dir(out)
	if stream {
		dir = os.TempDir()
	}
	f, err := bundlebuild.CreateTemp(dir, "build") // locked: no other run takes it for a leftover
	if err != nil {
		return nil, 0, "", cliutil.Failf("io_error", "cannot create the output file").WithCause(err)
	}
	defer os.Remove(f.Name()) // after a successful rename this is a no-op
	h := sha256.New()
	cw := &bundlebuild.CountingWriter{W: io.MultiWriter(f, h)}
	m, err := write(cw)
	if err != nil {
		f.Close()
		return nil, 0, "", err
	}
	if stream {
		err := copyToStream(f, out, k)
		f.Close()
		if err != nil {
			return nil, 0, "", err
		}
		return m, cw.N, hex.EncodeToString(h.Sum(nil)), nil
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, 0, "", cliutil.Failf("io_error", "cannot write the output file").WithCause(err)
	}
	if err := f.Close(); err != nil {
		return nil, 0, "", cliutil.Failf("io_error", "cannot write the output file").WithCause(err)
	}
	if err := stillFile(out); err != nil {
		return nil, 0, "", err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return nil, 0, "", cliutil.Failf("io_error", "cannot move the bundle into place").WithCause(err)
	}
	return m, cw.N, hex.EncodeToString(h.Sum(nil)), nil
}

// checkOut judges an -o FILE (judgeOut) before any key is read, anything
// signed or built (docs/SPEC-DECISIONS.md CLI-101, CLI-105): a name that
// is refused is refused first. "-" and no name pass.
func checkOut(out string) error {
	if out == stdio || out == "" {
		return nil
	}
	_, err := judgeOut(out)
	return err
}

// writeFileAtomic writes data to out as writeAtomic does (a signed
// statement or a receipt: small, already encoded).
func writeFileAtomic(out string, data []byte) error {
	_, _, _, err := writeAtomic(out, func(w io.Writer) (*bundle.Manifest, error) {
		_, err := w.Write(data)
		return nil, err
	})
	return err
}

// signerKIDs returns the did:keys of keys, in the order given.
func signerKIDs(keys []ed25519.PrivateKey) []string {
	var kids []string
	for _, s := range keyInfos(keys) {
		kids = append(kids, s.KID)
	}
	return kids
}
