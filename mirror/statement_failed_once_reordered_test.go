package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// retiringRotation signs, by signers, trust statement 1 for org.example
// adding the key add (named name) and retiring the key retire.
func retiringRotation(t *testing.T, name string, add, retire ed25519.PrivateKey, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: "org.example", Sequence: 1, Prev: make([]byte, 32),
		CreatedAt: "2026-11-20T11:30:00Z", Threshold: 1,
		Add:    []bundle.NamedKey{{Name: name, Key: amp.DIDKey(add.Public().(ed25519.PublicKey))}},
		Retire: []string{amp.DIDKey(retire.Public().(ed25519.PublicKey))}}
	r.Normalize()
	data, err := bundle.SignRotation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRevocationFailedOnceIsLostToAStatementListedAfterIt: an honest
// mirror lists, in the order its store applied them, a revocation of
// echo version 1 signed by testKey, then a trust statement (signed by
// testKey too) that retires testKey for org.example in favour of a new
// key. The revocation's download fails once (a cut connection, a damaged
// answer: one run). A store applies statements in the order it is given
// them, and a retired key's signatures stop counting from then on
// (docs/FORMAT.md §22). MIRROR-16 had the next run try the failed
// statement last: the trust statement was applied first, and the
// revocation, signed by a key no longer trusted, was refused then and on
// every run after: echo version 1 was never revoked at this site, though
// the mirror lists both statements in the right order. Should: the
// revocation is tried in its place, so it is applied before the
// statement listed after it.
func TestRevocationFailedOnceIsLostToAStatementListedAfterIt(t *testing.T) {
	k2 := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{31}, ed25519.SeedSize))
	rev := revokedEcho1(t, testKey)
	rot := retiringRotation(t, "second", k2, testKey, testKey)
	for _, fault := range []struct {
		name  string
		serve func(hm *repeatMirror, href string)
	}{
		{"served otherwise once", func(hm *repeatMirror, href string) {
			hm.files[href] = bytes.Repeat([]byte{'x'}, len(rev))
		}},
		{"not served once", func(hm *repeatMirror, href string) { delete(hm.files, href) }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			hm := newRepeatMirror(t)
			hm.statement(rev)
			hm.statement(rot)
			href := hm.ix.Statements[0].Href
			fault.serve(hm, href)
			ts := httptest.NewServer(hm)
			defer ts.Close()
			s := agentStore(t, testBundle(t, 1))
			for run := 1; run <= 3; run++ {
				rep, err := syncOnce(t, s, ts.URL, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("run %d: %+v", run, rep.Statements)
				hm.files[href] = rev // served whole from the second run on
			}
			if !echoRevoked(t, s) {
				t.Fatal("echo version 1 is not revoked after three runs: the revocation failed once, and the statement listed after it, applied first, retired its signer")
			}
			if chains, _ := s.TrustChains(); chains["org.example"] != 1 {
				t.Fatalf("trust chains %v, want org.example at 1", chains)
			}
		})
	}
}

// TestFailedFileOfThisMirrorNamedByAnotherUserReordersNothing: the file
// naming what the mirror failed (last-failed-*) is read from the spool
// whoever wrote it (it only reorders, MIRROR-16). A local user who may
// write the spool names there a revocation the mirror serves well: it is
// still applied before the statements listed after it.
func TestFailedFileOfThisMirrorNamedByAnotherUserReordersNothing(t *testing.T) {
	k2 := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{31}, ed25519.SeedSize))
	rev := revokedEcho1(t, testKey)
	rot := retiringRotation(t, "second", k2, testKey, testKey)
	hm := newRepeatMirror(t)
	hm.statement(rev)
	hm.statement(rot)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	c, err := newSyncClient(SyncOptions{URL: ts.URL, SpoolDir: spool}, syncHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.lastFailedPath(), []byte(statementFailedKey(hm.ix.Statements[0])), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := syncOnce(t, s, ts.URL, nil); err != nil {
		t.Fatal(err)
	}
	if !echoRevoked(t, s) {
		t.Fatal("a revocation the mirror serves well, named in the spool's file of failed files, was tried after the statement that retires its signer: never applied")
	}
}

// storeFailingOnce is a store whose first ApplyRevocation fails as the
// store's I/O would (a full disk, a lock held a moment), not as a verdict
// on the file.
type storeFailingOnce struct {
	*resolver.Store
	failed bool
}

func (s *storeFailingOnce) ApplyRevocation(data []byte) (*resolver.RevokeResult, error) {
	if !s.failed {
		s.failed = true
		return nil, amp.Named(0, resolver.ErrStoreIO, "disk full")
	}
	return s.Store.ApplyRevocation(data)
}

// TestRevocationTheStoreFailedOnceIsLostToAStatementListedAfterIt: the
// same order, both statements served well, but the store fails to apply
// the revocation once (store_io: nothing judged). The list went on: the
// trust statement behind it was applied in the same run and retired the
// revocation's signer, so the revocation was refused on every run after.
// Should: a statement the store could not apply ends the list for the
// run, as one the mirror could not deliver does.
func TestRevocationTheStoreFailedOnceIsLostToAStatementListedAfterIt(t *testing.T) {
	k2 := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{31}, ed25519.SeedSize))
	hm := newRepeatMirror(t)
	hm.statement(revokedEcho1(t, testKey))
	hm.statement(retiringRotation(t, "second", k2, testKey, testKey))
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	target := &storeFailingOnce{Store: s}
	opts := SyncOptions{URL: ts.URL, SpoolDir: filepath.Join(filepath.Dir(s.Path()), "sync")}
	for run := 1; run <= 2; run++ {
		rep, err := Sync(context.Background(), target, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d: %+v", run, rep.Statements)
		if run == 1 && rep.Statements[1].Outcome == OutcomeImported {
			t.Errorf("run 1 applied the statement listed after one the store failed to apply")
		}
	}
	if !echoRevoked(t, s) {
		t.Fatal("echo version 1 is not revoked after two runs: the store failed the revocation once, and the statement listed after it, applied in the same run, retired its signer")
	}
}
