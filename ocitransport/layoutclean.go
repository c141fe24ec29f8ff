package ocitransport

import (
	"strings"
	"time"
)

// The temporary files of a layout's writer: a blob being written, in
// blobs/sha256, and index.json being replaced, in the root. No reader
// takes either for a layout's file.
const (
	ingestPrefix    = ".ingest-"
	indexTempPrefix = ".index.json-"
)

// StaleLayoutTempAge is how long a layout's temporary file (.ingest-* in
// blobs/sha256, .index.json-* in the root) must have gone unwritten
// before the next writer to open the layout removes it as one a killed
// writer left (docs/SPEC-DECISIONS.md OCI-24). A live writer writes its
// file as its bytes arrive, so its time of last change is recent.
const StaleLayoutTempAge = 24 * time.Hour

// removeStaleTemps removes the temporary files of lf that a writer left
// (killed, or the system lost power) and has not written for
// StaleLayoutTempAge as of now: regular files only (a link is never
// followed, nor removed: the open refuses one among the blobs), by their
// own time of last change. A file another writer is still writing is
// younger; one removed anyway (a writer stalled that long) fails that
// writer's copy, io_error, and loses nothing of the layout. Failures are
// ignored: the files are left, as before.
func removeStaleTemps(lf *layoutFolders, now time.Time) {
	removeStaleIn(lf.top, indexTempPrefix, now)
	removeStaleIn(lf.blobs, ingestPrefix, now)
}

// removeStaleIn removes from d the regular files named prefix… unchanged
// for StaleLayoutTempAge as of now.
func removeStaleIn(d *layoutDir, prefix string, now time.Time) {
	if d == nil {
		return
	}
	f, err := d.list()
	if err != nil {
		return
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
				continue
			}
			st, err := d.lstat(e.Name())
			if err == nil && st.Mode().IsRegular() && now.Sub(st.ModTime()) > StaleLayoutTempAge {
				d.remove(e.Name())
			}
		}
		if err != nil { // io.EOF: all read
			return
		}
	}
}
