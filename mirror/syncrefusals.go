package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// RefusalTarget is a Target that says which files its store refused at
// its current generation lately (a *resolver.Store does: RefusedAt), and
// that generation (through an admin socket: as of its last answer). Sync
// does not download such a listed file again: offered, it would be
// refused the same way, since the store changed nothing it judges by
// (docs/SPEC-DECISIONS.md MIRROR-12).
type RefusalTarget interface {
	RefusedAt(sum []byte) (verdict string, ok bool, err error)
	Generation() uint64
}

// refusedBefore is the refusal to report, without any download, of the
// listed file whose SHA-256 is sum when the store refused it at its
// current generation lately, or when a sync refused it without offering
// it at this generation (localRefusals); nil otherwise, or when the store
// cannot say (an older agent: then it is not asked again in this sync).
func (c *syncClient) refusedBefore(sum []byte) error {
	if c.refusals == nil {
		return nil
	}
	verdict, ok, err := c.refusals.RefusedAt(sum)
	if amp.NameOf(err) == resolver.ErrUnsupported {
		c.log.Warn("the store's agent does not say which files it refused: they are downloaded and offered again", "err", err)
		c.refusals = nil
		return nil
	}
	if err != nil {
		return nil // offered, as when the store cannot say: it judges
	}
	if ok {
		return amp.Named(0, amp.ErrName(verdict), "refused by the store before, at this store generation (%s): not downloaded again until the store changes or a day has passed", verdict)
	}
	if verdict, ok := c.judged.at(c, sum); ok {
		return amp.Named(0, amp.ErrName(verdict), "refused by an earlier sync at this store generation without being offered (%s): not downloaded again until the store changes", verdict)
	}
	return nil
}

// listedSum is the SHA-256 of a listed file, from its index entry (hex,
// checked by DecodeIndex).
func listedSum(h string) []byte {
	sum, _ := hex.DecodeString(h)
	return sum
}

// maxLocalRefusals bounds the files localRefusals remembers: more than
// one index lists statements (DecodeIndex).
const maxLocalRefusals = 16384

// localRefusals are the files a sync refused without offering them to the
// store, for a reason that holds while the store's generation does not
// move (a trust statement after one the store refused as out of order:
// gapBefore), kept in the spool folder per mirror URL so that the next
// run neither downloads nor offers them again. Those of an earlier run
// count only at the generation they were judged at.
type localRefusals struct {
	loaded bool
	gen    uint64
	sums   map[string]string // hex SHA-256 -> verdict (an error name)
}

// localRefusalsPath is the spool file of the mirror's local refusals.
func (c *syncClient) localRefusalsPath() string {
	sum := sha256.Sum256([]byte(c.base.String()))
	return filepath.Join(c.opts.SpoolDir, "refused-"+hex.EncodeToString(sum[:8]))
}

// at returns the verdict of a file refused without being offered at the
// store's current generation.
func (l *localRefusals) at(c *syncClient, sum []byte) (string, bool) {
	l.load(c)
	if l.gen != c.refusals.Generation() {
		return "", false
	}
	v, ok := l.sums[hex.EncodeToString(sum)]
	return v, ok
}

// note remembers that the file sum was refused with verdict, without
// being offered, at the store's current generation.
func (l *localRefusals) note(c *syncClient, sum []byte, verdict amp.ErrName) {
	if c.refusals == nil {
		return
	}
	l.load(c)
	if gen := c.refusals.Generation(); l.gen != gen {
		l.gen, l.sums = gen, map[string]string{}
	}
	if len(l.sums) < maxLocalRefusals {
		l.sums[hex.EncodeToString(sum)] = string(verdict)
	}
}

// load reads the spool file once: a regular file whose first line is the
// generation, then a hex SHA-256 and an error name a line; lines that are
// not are skipped, at most maxLocalRefusals are read.
func (l *localRefusals) load(c *syncClient) {
	if l.loaded {
		return
	}
	l.loaded, l.sums = true, map[string]string{}
	p := c.localRefusalsPath()
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return
	}
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 32+maxLocalRefusals*(64+1+65)))
	lines := strings.Split(string(b), "\n")
	gen, err := strconv.ParseUint(lines[0], 10, 64)
	if err != nil {
		return
	}
	l.gen = gen
	for _, line := range lines[1:] {
		h, v, ok := strings.Cut(line, " ")
		if ok && len(l.sums) < maxLocalRefusals && len(h) == 64 && len(listedSum(h)) == sha256.Size && h == strings.ToLower(h) && safeCode(v) && v != "" && len(v) <= 64 {
			l.sums[h] = v
		}
	}
}

// save writes what is remembered, whole or not at all (a temporary file
// renamed), when it is of the store's generation now; else removes the
// file (the store moved: everything is judged again).
func (l *localRefusals) save(c *syncClient) {
	if c.refusals == nil || !l.loaded {
		return
	}
	p := c.localRefusalsPath()
	if len(l.sums) == 0 || l.gen != c.refusals.Generation() {
		os.Remove(p)
		return
	}
	var b strings.Builder
	b.WriteString(strconv.FormatUint(l.gen, 10))
	for h, v := range l.sums {
		b.WriteString("\n" + h + " " + v)
	}
	tmp, err := os.CreateTemp(c.opts.SpoolDir, ".refused-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(b.String())
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}
