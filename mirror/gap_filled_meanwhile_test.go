package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// gapFilledMeanwhile is a store that, when asked to apply the trust
// statement gap (refused rotation_gap: the store lacks the one before),
// first has the missing statements applied by another sync (fill, in
// order) and then answers the refusal it judged: another mirror's run
// filling the gap while this one runs.
type gapFilledMeanwhile struct {
	*resolver.Store
	gap  []byte
	fill [][]byte
	done bool
}

func (g *gapFilledMeanwhile) ApplyRotation(data []byte) (*resolver.RotateResult, error) {
	res, err := g.Store.ApplyRotation(data)
	if !g.done && bytes.Equal(data, g.gap) && amp.NameOf(err) == resolver.ErrRotationGap {
		g.done = true
		for _, f := range g.fill {
			if _, ferr := g.Store.ApplyRotation(f); ferr != nil {
				panic(ferr)
			}
		}
	}
	return res, err
}

// TestGapFilledMeanwhileDoesNotSkipTheNextStatement: sync remembers, in
// its spool folder, the trust statements it refused without offering
// them after one of their scope was refused as rotation_gap, and skips
// them in later runs while the store stays at the generation they were
// noted at. The note took the store's generation at the time of the note,
// not the one the gap was judged at: statement 2 refused as out of order,
// then another sync applying 1 and 2 (moving the generation), left
// statement 3 skipped "at this generation" in every run while the store
// stayed idle, a genuine trust statement never applied. A gap now counts
// only at the generation it was judged at (one that moved while it was
// judged is not noted), and notes last a day at most (MIRROR-13).
func TestGapFilledMeanwhileDoesNotSkipTheNextStatement(t *testing.T) {
	var chain [][]byte
	var prev []byte
	for seq := uint64(1); seq <= 3; seq++ {
		add := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(seq + 60)}, ed25519.SeedSize))
		prev = rotationAfter(t, prev, seq, "r"+string(rune('0'+seq)), add, testKey)
		chain = append(chain, prev)
	}
	hm := newRepeatMirror(t)
	hm.statement(chain[1])
	hm.statement(chain[2])
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	g := &gapFilledMeanwhile{Store: s, gap: chain[1], fill: chain[:2]}
	rep1, err := Sync(context.Background(), g, SyncOptions{URL: ts.URL, SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	rep2, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum3 := sha256.Sum256(chain[2])
	if has, _ := s.HasStatement(sum3[:]); !has {
		t.Fatalf("statement 3, after 1 and 2 were applied by another sync during run 1: run 1 %+v; run 2 %+v; want applied in run 2",
			rep1.Statements, rep2.Statements)
	}
}
