package resolver

import (
	"bytes"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestStatementsKeptByteForByteInApplicationOrder: the store keeps the
// exact signed bytes of every applied trust and revocation statement, in
// the order applied, once each; a refused statement (out of order) is not
// kept, so a mirror can never serve what the store did not verify.
func TestStatementsKeptByteForByteInApplicationOrder(t *testing.T) {
	s := rotationStore(t)
	ss := chain(t)
	if _, err := s.ApplyRotation(ss[1]); err == nil {
		t.Fatal("out-of-order statement applied")
	}
	for _, st := range ss {
		if _, err := s.ApplyRotation(st); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.ApplyRotation(ss[0]); err != nil || !res.Unchanged {
		t.Fatalf("again: %+v %v", res, err)
	}
	rev := revocation(t, "org.example", []string{didOfPriv(testKeyN(44))}, nil, testKeyN(42), testKeyN(43))
	if _, err := s.ApplyRevocation(rev); err != nil {
		t.Fatal(err)
	}
	want := [][]byte{ss[0], ss[1], ss[2], rev}
	got, err := s.Statements()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d statements kept, want %d", len(got), len(want))
	}
	for i, st := range got {
		ct := bundle.MediaTypeRotation
		if i == 3 {
			ct = bundle.MediaTypeRevocation
		}
		if !bytes.Equal(st.Data, want[i]) || st.Seq != uint64(i+1) || st.ContentType != ct || !bytes.Equal(st.SHA256, sha256sum(want[i])) {
			t.Fatalf("statement %d: seq %d type %s, bytes equal %v", i, st.Seq, st.ContentType, bytes.Equal(st.Data, want[i]))
		}
		if has, err := s.HasStatement(st.SHA256); err != nil || !has {
			t.Fatalf("HasStatement(%d) = %v %v", i, has, err)
		}
	}
	if has, _ := s.HasStatement(sha256sum([]byte("never applied"))); has {
		t.Fatal("HasStatement true for a statement never applied")
	}
}
