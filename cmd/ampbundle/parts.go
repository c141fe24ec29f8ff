package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// Split media: 'ampbundle split', 'ampbundle join', and the part index as
// input of verify and import (docs/FORMAT.md §13).

func splitCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "split",
		Usage:     "cut a bundle file into numbered parts plus a signed part index",
		ArgsUsage: "FILE",
		Description: `Cuts the bundle file FILE (full or delta) into parts of at most SIZE
bytes, named FILE.part001, FILE.part002, … (plain slices: concatenated in
order they are FILE), and writes the part index FILE.parts: the SHA-256 of
every part and of the whole, signed by --key (docs/FORMAT.md §13). verify and
import take the index and the folders the parts are in, in any order, and
stream through the parts without joining them; join recreates FILE.

All or nothing, also across a kill: the parts and the index are written and
synced in a temporary folder inside the destination first, then moved into
place, the index last (with --force an old index of the same name is removed
before any part is replaced), so an index there always names a complete set
of its own parts. Existing parts or index of the same names are replaced
only with --force. What a killed run left in the folder is removed first.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Usage: "largest part `SIZE`: bytes, or with K, M, G (KiB, MiB, GiB), e.g. 700M (required)"},
			&cli.StringSliceFlag{Name: "key", Usage: "publisher private key `FILE` that signs the index (required, mode 0600; repeatable)"},
			cliutil.PassphraseFileFlag(),
			&cli.StringFlag{Name: "out-dir", Usage: "`DIR` for the parts and the index (default: FILE's folder)"},
			forceFlag,
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 1, "the bundle FILE"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "size", "key"); err != nil {
				return err
			}
			size, err := parseSize(c.String("size"))
			if err != nil {
				return err
			}
			keys, err := signingKeys(c, env, c.StringSlice("key"))
			if err != nil {
				return err
			}
			path := c.Args().First()
			dir := c.String("out-dir")
			if dir == "" {
				dir = filepath.Dir(path)
			}
			var total int64
			if st, err := os.Stat(path); err == nil {
				total = st.Size()
			}
			prog := cliutil.NewProgress(env, c.Bool("json"), "splitting", total)
			index, x, err := bundlebuild.SplitFileWith(path, dir, size, keys, bundlebuild.SplitOptions{Force: c.Bool("force"), Progress: prog.Update, Now: env.Now})
			prog.Done()
			if err != nil {
				return err
			}
			if c.Bool("json") {
				parts := make([]map[string]any, len(x.Parts))
				for i, p := range x.Parts {
					parts[i] = map[string]any{"file": filepath.Join(dir, p.Name), "size": p.Size, "sha256": fmt.Sprintf("%x", p.SHA256)}
				}
				return cliutil.PrintJSON(env.Stdout, map[string]any{"index": index, "bundle_id": x.BundleID, "version": x.Version,
					"size": x.Size, "sha256": fmt.Sprintf("%x", x.SHA256), "parts": parts})
			}
			fmt.Fprintf(env.Stdout, "split %s (%s version %d, %d bytes) into %s of at most %d bytes\n",
				cliutil.Sanitize(path), cliutil.Sanitize(x.BundleID), x.Version, x.Size, nParts(len(x.Parts)), size)
			for _, p := range x.Parts {
				fmt.Fprintf(env.Stdout, "  %s  %d bytes\n", cliutil.Sanitize(filepath.Join(dir, p.Name)), p.Size)
			}
			fmt.Fprintf(env.Stdout, "  index %s (signed; carry it with the parts)\n", cliutil.Sanitize(index))
			return nil
		},
	}
}

func joinCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "join",
		Usage:     "recreate a bundle file from its part index and parts",
		ArgsUsage: "INDEX [PLACE...]",
		Description: `Reads the part index INDEX (FILE.parts), finds the parts in the PLACEs
(files or folders, any order; default: INDEX's folder), checks each part's
size and SHA-256 and the whole's SHA-256 as it streams, and writes the
original bytes to -o FILE atomically (an existing FILE is replaced only with
--force; what a killed run left in the folder is removed first). With -o -
the bytes go to stdout once every part checked, and the summary to stderr.
With --trust the index signature is checked too (verify and import always
check it); without it, join says that the signature was not checked. Not
needed for verify or import, which read the parts directly.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "`FILE` to write, - for stdout (required)"},
			&cli.StringSliceFlag{Name: "trust", Usage: "trusted publisher key: `PUB` PEM file or did:key (repeatable)"},
			forceFlag,
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return cliutil.Usagef("expected the part INDEX and optionally the PLACEs of its parts")
			}
			if err := cliutil.Require(c, "out"); err != nil {
				return err
			}
			policy := &bundle.Policy{}
			check := len(c.StringSlice("trust")) > 0
			if check {
				var err error
				if policy, err = trustFlags(c.StringSlice("trust")); err != nil {
					return err
				}
			}
			in, err := openParts(c.Args().Slice(), policy, !check)
			if err != nil {
				return err
			}
			defer in.Close()
			out := c.String("out")
			prog := cliutil.NewProgress(env, c.Bool("json"), "joining", int64(in.x.Size))
			size, sum, err := writeOutput(env, out, "join", c.Bool("force"), func(w io.Writer) error {
				_, err := io.Copy(&bundlebuild.CountingWriter{W: w, Progress: prog.Update}, in)
				return err
			})
			prog.Done()
			if err != nil {
				return in.Explain(err)
			}
			w := summaryTo(env, out)
			if c.Bool("json") {
				return cliutil.PrintJSON(w, map[string]any{"file": out, "size": size, "sha256": sum, "parts": len(in.x.Parts), "signature_checked": check})
			}
			if !check {
				fmt.Fprintln(w, "signature NOT checked: give --trust PUB to check the part index's signature, or run 'ampbundle verify' on the result")
			}
			fmt.Fprintf(w, "joined %s into %s: %d bytes, sha256 %s\n", nParts(len(in.x.Parts)), cliutil.Sanitize(outputName(out)), size, sum)
			return nil
		},
	}
}

// partsInput is a split bundle opened for reading.
type partsInput struct {
	*bundlebuild.PartsReader
	x       *bundle.PartIndex
	signers []string
}

// isPartIndexFile reports whether path is a regular file that starts like
// a part index (anything else is not opened: BUNDLE-19).
func isPartIndexFile(path string) bool {
	f, err := bundlebuild.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return bundle.IsPartIndex(head[:n])
}

// openParts reads the part index args[0], verified against policy (or
// only decoded when unchecked), finds its parts in args[1:] (default: the
// index's folder), checks that they carry the bundle the index names
// (part_mismatch) and returns the stream over them.
func openParts(args []string, policy *bundle.Policy, unchecked bool) (*partsInput, error) {
	// Only a regular file is opened: a FIFO or a device in the index's
	// place is refused at once, as a part would be (BUNDLE-19).
	f, err := bundlebuild.OpenRegular(args[0])
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot open the part index").WithCause(err)
	}
	defer f.Close()
	var x *bundle.PartIndex
	var signers []string
	if unchecked {
		x, err = bundle.DecodePartIndexFile(f)
	} else {
		x, signers, err = bundle.ReadPartIndex(f, policy)
	}
	if err != nil {
		return nil, err
	}
	places := args[1:]
	if len(places) == 0 {
		places = []string{filepath.Dir(args[0])}
	}
	paths, err := bundlebuild.LocateParts(x, places)
	if err != nil {
		return nil, err
	}
	// The parts must carry the bundle the index names (bundle_id and
	// version), checked before any side effect: an import, an output
	// file, a report of who signed the index (BUNDLE-14).
	pr := bundlebuild.NewPartsReader(x, paths)
	if err := pr.CheckCarries(); err != nil {
		pr.Close()
		return nil, err
	}
	return &partsInput{PartsReader: pr, x: x, signers: signers}, nil
}

// storePolicy is the store's trusted keys as a policy (each key with its
// scopes), for checking a part index.
func storePolicy(s registry) (*bundle.Policy, error) {
	keys, err := s.TrustList()
	if err != nil {
		return nil, err
	}
	p := &bundle.Policy{}
	for _, k := range keys {
		p.Keys = append(p.Keys, bundle.TrustedKey{Name: k.Name, Key: k.Key, Scopes: k.Scopes, Except: k.Except})
	}
	return p, nil
}

// parseSize reads a part size: bytes, or a number with K, M or G (KiB,
// MiB, GiB; an optional trailing "B" or "iB" is accepted).
func parseSize(s string) (int64, error) {
	n, err := parseByteSize("--size", s)
	if err != nil {
		return 0, err
	}
	if n < bundle.MinPartSize {
		return 0, cliutil.Usagef("--size must be at least %d bytes (64K)", bundle.MinPartSize)
	}
	return n, nil
}

// parseByteSize reads the value of the flag name: bytes, or a number with
// K, M or G (KiB, MiB, GiB; an optional trailing "B" or "iB" is
// accepted).
func parseByteSize(name, s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, strings.TrimSuffix(t, "G")
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, cliutil.Usagef("%s must be a number of bytes, or with K, M or G, such as 700M", name)
	}
	return n * mult, nil
}

// nParts is "1 part" or "N parts".
func nParts(n int) string {
	if n == 1 {
		return "1 part"
	}
	return fmt.Sprintf("%d parts", n)
}
