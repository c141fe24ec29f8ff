package bundlebuild

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestSplitWhoseKeysCannotSignIsRefusedBeforeAnyPart: the threat
// (docs/SPEC-DECISIONS.md BUILD-14): SplitFileWith, a library call,
// checked its signing keys only in bundle.SignPartIndex, after every part
// was staged: a caller's keys that cannot sign (none, more than
// bundle.MaxSignatures, one key twice) had the whole bundle read, written
// and synced into the output folder (its size on disk, the folder's
// leftovers removed, Progress at 100 %) before the refusal; a key of
// another length than an Ed25519 private key's panicked there
// (ed25519.Sign); and a key whose public half is not its seed's signed,
// and with Force committed over the old one, an index whose signature
// verifies under no key. Now the keys are checked, and the index to be is
// signed once with its hashes still zero, before any side effect: each
// is refused with its error name, nothing staged (Progress never called),
// nothing removed, nothing written.
func TestSplitWhoseKeysCannotSignIsRefusedBeforeAnyPart(t *testing.T) {
	k := testKey(1)
	src := t.TempDir()
	path := filepath.Join(src, "b.ampb")
	if err := os.WriteFile(path, build(t, bigDraft(t, "org.example.keys", 4, 64<<10), k), 0o644); err != nil {
		t.Fatal(err)
	}
	var nine []ed25519.PrivateKey
	for i := range bundle.MaxSignatures + 1 {
		nine = append(nine, testKey(byte(10+i)))
	}
	mixed := append(slices.Clone(k.Seed()), testKey(2).Public().(ed25519.PublicKey)...)
	for _, tc := range []struct {
		name string
		keys []ed25519.PrivateKey
		want amp.ErrName
	}{
		{"no key", nil, bundle.ErrInconsistent},
		{"more keys than signatures", nine, bundle.ErrInconsistent},
		{"one key twice", []ed25519.PrivateKey{k, testKey(2), k}, bundle.ErrDuplicateSigner},
		{"a key cut short", []ed25519.PrivateKey{k[:40]}, bundle.ErrInconsistent},
		{"an empty key", []ed25519.PrivateKey{k, {}}, bundle.ErrInconsistent},
		{"a key whose public half is another key's", []ed25519.PrivateKey{ed25519.PrivateKey(mixed)}, bundle.ErrInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			now := time.Now()
			left := filepath.Join(out, ".ampbundle-join-1.tmp")
			if err := os.WriteFile(left, []byte("left by a killed run"), 0o600); err != nil {
				t.Fatal(err)
			}
			aged(t, left, now)
			var staged int64
			o := SplitOptions{Force: true, Now: func() time.Time { return now }, Progress: func(done int64) { staged = done }}
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				_, _, err = SplitFileWith(path, out, bundle.MinPartSize, tc.keys, o)
				return err
			}()
			if staged != 0 {
				t.Errorf("%d bytes of the bundle were staged before the keys were refused", staged)
			}
			expectName(t, err, tc.want)
			entries, _ := os.ReadDir(out)
			if len(entries) != 1 || entries[0].Name() != filepath.Base(left) {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Fatalf("the output folder holds %v after the refusal, want only the leftover it held (nothing removed, nothing written)", names)
			}
		})
	}
	// The keys that can sign still split.
	if _, _, err := SplitFileWith(path, t.TempDir(), bundle.MinPartSize, []ed25519.PrivateKey{k, testKey(2)}, SplitOptions{}); err != nil {
		t.Fatal(err)
	}
}
