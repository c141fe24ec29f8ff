package agent

import (
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
)

// spool makes, reopens and removes the agent's spool files inside one
// directory held open (an os.Root), never by a path through the folders
// above it: a directory another user swaps in at StreamLimits.SpoolDir's
// path after the start (whoever may write a folder above it can) is never
// written to or read from (docs/SPEC-DECISIONS.md CLI-56).
type spool struct {
	root *os.Root
	own  bool // opened by the agent (closed by Close), not StreamLimits.SpoolRoot
	rand io.Reader
}

// openSpool holds the spool directory of lim open: StreamLimits.SpoolRoot
// when set, else SpoolDir opened once. Agents that serve no stream hold
// nothing (nil).
func openSpool(lim StreamLimits, served bool, rand io.Reader) (*spool, error) {
	if !served {
		return nil, nil
	}
	if lim.SpoolRoot != nil {
		return &spool{root: lim.SpoolRoot, rand: rand}, nil
	}
	lim.setDefaults()
	root, err := os.OpenRoot(lim.SpoolDir)
	if err != nil {
		return nil, misconfigured("cannot open the spool directory: %v", err)
	}
	return &spool{root: root, own: true, rand: rand}, nil
}

// create makes a new spool file, its name prefix followed by 16 random hex
// digits, readable and writable by the agent's user alone. It never opens
// an existing file.
func (s *spool) create(prefix string) (*os.File, string, error) {
	var b [8]byte
	for range 16 {
		if _, err := io.ReadFull(s.rand, b[:]); err != nil {
			return nil, "", err
		}
		name := prefix + hex.EncodeToString(b[:])
		f, err := s.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", errors.New("no free spool file name after 16 tries")
}

// open reopens a spool file create made.
func (s *spool) open(name string) (*os.File, error) { return s.root.Open(name) }

// remove removes a spool file create made; what cannot be removed is left
// to the next start (ampagent serve removes the spool files a run left).
func (s *spool) remove(name string) { _ = s.root.Remove(name) }

// close lets go of the directory the agent opened itself.
func (s *spool) close() {
	if s != nil && s.own {
		s.root.Close()
	}
}
