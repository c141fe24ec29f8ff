package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/regfile"
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
// copyKept: the store found the file to be a copy of a statement it keeps
// (resolver.StatementCopy): current, not downloaded again.
func (c *syncClient) refusedBefore(sum []byte) (copyKept bool, err error) {
	if c.refusals == nil {
		return false, nil
	}
	verdict, ok, err := c.refusals.RefusedAt(sum)
	if amp.NameOf(err) == resolver.ErrUnsupported {
		c.log.Warn("the store's agent does not say which files it refused: they are downloaded and offered again", "err", err)
		c.refusals = nil
		return false, nil
	}
	if err != nil {
		return false, nil // offered, as when the store cannot say: it judges
	}
	if ok && verdict == resolver.StatementCopy {
		return true, nil
	}
	if ok {
		return false, amp.Named(0, amp.ErrName(verdict), "refused by the store before, at this store generation (%s): not downloaded again until the store changes or a day has passed", verdict)
	}
	if verdict, ok := c.judged.at(c, sum); ok {
		return false, amp.Named(0, amp.ErrName(verdict), "refused by an earlier sync without being offered (%s), at this store generation or under this trust: not downloaded again until that changes", verdict)
	}
	return false, nil
}

// listedSum is the SHA-256 of a listed file, from its index entry (hex,
// checked by DecodeIndex).
func listedSum(h string) []byte {
	sum, _ := hex.DecodeString(h)
	return sum
}

// sumHex reports whether h is a SHA-256 in lower-case hex, as the spool
// files write one.
func sumHex(h string) bool {
	return len(h) == 2*sha256.Size && len(listedSum(h)) == sha256.Size && h == strings.ToLower(h)
}

// maxLocalRefusals bounds the files localRefusals remembers, both kinds
// together: more than one index lists statements (DecodeIndex).
const maxLocalRefusals = 16384

// localRefusals are the files a sync refused without offering them to the
// store, kept in the spool folder per mirror URL so that the next run
// neither downloads nor offers them again, each keyed by what its verdict
// depends on besides the file (its SHA-256):
//
//   - at a store generation (gen, sums): a trust statement after one the
//     store refused as out of order (gapBefore), which holds while the
//     store's generation does not move;
//   - under a trust (trust, trusted): a file whose signatures the store's
//     trust refused (noteUnvouched), which holds while the trust sync
//     judges by (trustDigest) is the same, whatever else moves the
//     generation (an import, a heartbeat): docs/SPEC-DECISIONS.md
//     MIRROR-24.
//
// Each kind counts for resolver.RefusalReauditInterval after its first
// note at its key, as the store's own record of refusals does
// (docs/SPEC-DECISIONS.md MIRROR-13).
type localRefusals struct {
	loaded bool
	// dir is the spool folder as load resolved it and judged it sound
	// (no other user may write it nor any folder its path is looked up
	// in); "" when it was not: the notes are then neither read nor
	// written.
	dir   string
	gen   uint64
	since int64             // unix seconds (sync clock) the first note at gen was made
	sums  map[string]string // hex SHA-256 -> verdict (an error name)
	// trust is the trustDigest the notes of trusted were judged under,
	// first at trustSince (unix seconds).
	trust      string
	trustSince int64
	trusted    map[string]string
}

// localRefusalsPrefix starts the name of every spool file of local
// refusals.
const localRefusalsPrefix = "refused-"

// The spool file of local refusals: its first line is the generation and
// the time of the first note at it, each line after a hex SHA-256 and an
// error name (noted at that generation), as before MIRROR-24; then, for
// the notes under a trust, a line trustLinePrefix, the trustDigest and the
// time of the first note under it, and a line trustedNotePrefix, a hex
// SHA-256 and an error name each. A sync of an earlier release reads the
// lines of the first kind only, and skips the others (their first field is
// no SHA-256): it downloads those files again, no more.
const (
	trustLinePrefix   = "trust "
	trustedNotePrefix = "t "
)

// The temporary files the spool files of local refusals and of failed
// files (noteFailed) are written through, renamed over them once whole.
// One a crashed sync left is removed by a later one
// (removeStaleLocalRefusals).
const (
	localRefusalsTempPrefix = ".refused-"
	lastFailedTempPrefix    = ".last-failed-"
)

// localRefusalsPath is the spool file of the mirror's local refusals by
// the spool's path as given (load and save use the folder it resolved
// to, dir).
func (c *syncClient) localRefusalsPath() string {
	return filepath.Join(c.opts.SpoolDir, c.localRefusalsName())
}

// localRefusalsName is the name of the spool file of the mirror's local
// refusals.
func (c *syncClient) localRefusalsName() string {
	sum := sha256.Sum256([]byte(c.base.String()))
	return localRefusalsPrefix + hex.EncodeToString(sum[:8])
}

// current reports whether notes made at generation gen, first at unix
// time at, still count: the store is at gen and less than a day passed.
func (c *syncClient) current(gen uint64, at int64) bool {
	return gen == c.refusals.Generation() && c.withinADay(at)
}

// currentTrust reports whether notes made under the trust digest trust,
// first at unix time at, still count: sync judges by that trust now and
// less than a day passed.
func (c *syncClient) currentTrust(trust string, at int64) bool {
	return trust != "" && trust == c.trustKey && c.withinADay(at)
}

// withinADay reports whether less than resolver.RefusalReauditInterval
// passed since the unix time at (not in the future).
func (c *syncClient) withinADay(at int64) bool {
	now := c.opts.Now().Unix()
	return at <= now && now < at+int64(resolver.RefusalReauditInterval/time.Second)
}

// at returns the verdict of a file refused without being offered at the
// store's current generation, or under the trust sync judges by now,
// within the last day.
func (l *localRefusals) at(c *syncClient, sum []byte) (string, bool) {
	l.load(c)
	h := hex.EncodeToString(sum)
	if c.current(l.gen, l.since) {
		if v, ok := l.sums[h]; ok {
			return v, true
		}
	}
	if c.currentTrust(l.trust, l.trustSince) {
		if v, ok := l.trusted[h]; ok {
			return v, true
		}
	}
	return "", false
}

// note remembers that the file sum was refused with verdict, without
// being offered, following a refusal the store judged at generation gen.
// When the store has moved since, nothing is noted (the next run judges
// the file again).
func (l *localRefusals) note(c *syncClient, sum []byte, verdict amp.ErrName, gen uint64) {
	if c.refusals == nil || c.refusals.Generation() != gen {
		return
	}
	l.load(c)
	if !c.current(l.gen, l.since) {
		l.gen, l.since, l.sums = gen, c.opts.Now().Unix(), map[string]string{}
	}
	if l.count() < maxLocalRefusals {
		l.sums[hex.EncodeToString(sum)] = string(verdict)
	}
}

// noteTrusted remembers that the file sum was refused with verdict,
// without being offered, by the store's trust sync judges by now
// (trustKey).
func (l *localRefusals) noteTrusted(c *syncClient, sum []byte, verdict amp.ErrName) {
	if c.refusals == nil || c.trustKey == "" {
		return
	}
	l.load(c)
	if !c.currentTrust(l.trust, l.trustSince) {
		l.trust, l.trustSince, l.trusted = c.trustKey, c.opts.Now().Unix(), map[string]string{}
	}
	if l.count() < maxLocalRefusals {
		l.trusted[hex.EncodeToString(sum)] = string(verdict)
	}
}

// count is how many files are remembered, both kinds together.
func (l *localRefusals) count() int { return len(l.sums) + len(l.trusted) }

// load reads the spool file once: a regular file of the form above
// (trustLinePrefix); lines that are not are skipped, at most
// maxLocalRefusals notes are read. A file of another form is read as
// empty, and so is one in a spool folder, or itself, that others may write
// (othersMayWrite), or below a folder through which others may replace
// the spool (folderAboveOthersMayWrite): a note skips a listed file, a
// revocation included, so it is taken only where no other user may write,
// by the mode bits and the owner. The file is read through the spool's
// path as resolved and judged, never resolved again: a link on the way,
// in a folder others may write, repointed after the check, redirects
// nothing (docs/SPEC-DECISIONS.md MIRROR-16, MIRROR-17, MIRROR-18,
// MIRROR-21).
func (l *localRefusals) load(c *syncClient) {
	if l.loaded {
		return
	}
	l.loaded, l.sums, l.trusted = true, map[string]string{}, map[string]string{}
	if _, err := os.Stat(c.opts.SpoolDir); err != nil {
		return // no spool folder: no notes
	}
	real, above := folderAboveOthersMayWrite(c.opts.SpoolDir)
	if above != "" {
		c.log.Warn("others may write to a folder above the sync spool folder, and so replace it: the files earlier syncs refused are downloaded again (chmod go-w, or +t, the folder, owned by root or the sync's user)", "dir", c.opts.SpoolDir, "above", above)
		return
	}
	dir, err := os.Lstat(real)
	if err != nil || !dir.IsDir() {
		return
	}
	if othersMayWrite(dir) {
		c.log.Warn("others may write to the sync spool folder: the files earlier syncs refused are downloaded again (chmod go-w the folder, owned by the sync's user)", "dir", c.opts.SpoolDir)
		return
	}
	l.dir = real
	p := filepath.Join(real, c.localRefusalsName())
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || othersMayWrite(fi) {
		return
	}
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, int64(256+maxLocalRefusals*(len(trustedNotePrefix)+64+1+65))))
	l.parse(strings.Split(string(b), "\n"))
}

// parse reads the lines of the spool file of local refusals (load): a
// line not of the form written is skipped, and so is the rest of the file
// after a second trust line or one that does not parse.
func (l *localRefusals) parse(lines []string) {
	g, t, _ := strings.Cut(lines[0], " ")
	gen, err1 := strconv.ParseUint(g, 10, 64)
	at, err2 := strconv.ParseInt(t, 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	l.gen, l.since = gen, at
	notes, prefix := l.sums, ""
	for _, line := range lines[1:] {
		if rest, ok := strings.CutPrefix(line, trustLinePrefix); ok {
			d, t, _ := strings.Cut(rest, " ")
			at, err := strconv.ParseInt(t, 10, 64)
			if err != nil || !sumHex(d) || l.trust != "" {
				return
			}
			l.trust, l.trustSince, notes, prefix = d, at, l.trusted, trustedNotePrefix
			continue
		}
		note, ok := strings.CutPrefix(line, prefix)
		h, v, found := strings.Cut(note, " ")
		if ok && found && l.count() < maxLocalRefusals && sumHex(h) && amp.ValidErrName(v) {
			notes[h] = v
		}
	}
}

// trustDigest names the store's trust p as sync judges files by it: the
// SHA-256 (lower-case hex) of its keys (name, key, scopes, exceptions) and
// thresholds in a canonical order, each field length-prefixed, and of the
// form's version. A verdict of bundle.VerifyFor, VerifyStatement or
// VerifyAll on a file depends on the file and on these alone, so a note
// made under one digest holds under the same one (localRefusals).
func trustDigest(p *bundle.Policy) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	list := func(ss []string) {
		ss = slices.Sorted(slices.Values(ss))
		field(strconv.Itoa(len(ss)))
		for _, s := range ss {
			field(s)
		}
	}
	field("ampbundle-sync-trust/1")
	keys := slices.Clone(p.Keys)
	slices.SortFunc(keys, func(a, b bundle.TrustedKey) int {
		if c := bytes.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	field(strconv.Itoa(len(keys)))
	for _, k := range keys {
		field(k.Name)
		field(string(k.Key))
		list(k.Scopes)
		list(k.Except)
	}
	scopes := slices.Sorted(maps.Keys(p.Thresholds))
	field(strconv.Itoa(len(scopes)))
	for _, sc := range scopes {
		field(sc)
		field(strconv.Itoa(p.Thresholds[sc]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// othersMayWrite reports whether fi's mode lets a group or other users
// write it, or another user than the sync's (or root) owns it
// (ownedByAnother: a folder 0755 of another user is that user's to
// write). Not judged on Windows, whose mode bits do not say so.
func othersMayWrite(fi os.FileInfo) bool {
	return runtime.GOOS != "windows" && (fi.Mode().Perm()&0o022 != 0 || ownedByAnother(fi))
}

// folderAboveOthersMayWrite is regfile.FolderAbove for the spool: real,
// the spool's path resolved once (through which what is judged is then
// read), and above, the first folder on the way through which another
// user may replace or redirect the spool ("" when there is none). A
// folder that cannot be read counts as one others may write, and so do
// more than regfile.MaxFolderLinks links (docs/SPEC-DECISIONS.md
// MIRROR-18, MIRROR-21).
func folderAboveOthersMayWrite(dir string) (real, above string) {
	real, a := regfile.FolderAbove(dir)
	if a != nil {
		return real, a.Path
	}
	return real, ""
}

// save writes what is remembered, whole or not at all (a temporary file
// renamed), of each kind while it still counts (current, currentTrust);
// when neither does, it removes the file (the store or its trust moved,
// or a day passed: everything is judged again). It writes beneath the
// spool folder load resolved and judged sound (dir), never through the
// spool's path again: a link on it, repointed since, or one in a folder
// others may write, leads nowhere this sync writes notes
// (docs/SPEC-DECISIONS.md MIRROR-23). It also removes the files of other
// mirrors not written for a day (a mirror no longer synced).
func (l *localRefusals) save(c *syncClient) {
	if c.failed != nil { // not a dry run
		c.removeStaleLocalRefusals()
	}
	if c.refusals == nil || !l.loaded || l.dir == "" {
		return
	}
	p := filepath.Join(l.dir, c.localRefusalsName())
	byGen := len(l.sums) > 0 && c.current(l.gen, l.since)
	byTrust := len(l.trusted) > 0 && c.currentTrust(l.trust, l.trustSince)
	if !byGen && !byTrust {
		os.Remove(p)
		return
	}
	var b strings.Builder
	if byGen {
		b.WriteString(strconv.FormatUint(l.gen, 10) + " " + strconv.FormatInt(l.since, 10))
		for h, v := range l.sums {
			b.WriteString("\n" + h + " " + v)
		}
	} else {
		b.WriteString("0 0") // no notes at a generation: a day before any
	}
	if byTrust {
		b.WriteString("\n" + trustLinePrefix + l.trust + " " + strconv.FormatInt(l.trustSince, 10))
		for h, v := range l.trusted {
			b.WriteString("\n" + trustedNotePrefix + h + " " + v)
		}
	}
	tmp, err := os.CreateTemp(l.dir, localRefusalsTempPrefix+"*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(b.String())
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}

// removeStaleLocalRefusals removes the spool files of local refusals (of
// any mirror) last written more than resolver.RefusalReauditInterval ago:
// none of them would count any more; and the temporary files of those and
// of the failed files (localRefusalsTempPrefix, lastFailedTempPrefix) as
// old, which a sync killed before renaming one left: no sync writes one
// for a day, and nothing else would remove them (docs/SPEC-DECISIONS.md
// MIRROR-16).
func (c *syncClient) removeStaleLocalRefusals() {
	entries, err := os.ReadDir(c.opts.SpoolDir)
	if err != nil {
		return
	}
	cutoff := c.opts.Now().Add(-resolver.RefusalReauditInterval)
	for _, e := range entries {
		n := e.Name()
		ours := strings.HasPrefix(n, localRefusalsPrefix) || strings.HasPrefix(n, localRefusalsTempPrefix) || strings.HasPrefix(n, lastFailedTempPrefix)
		if !ours || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(c.opts.SpoolDir, e.Name()))
		}
	}
}
