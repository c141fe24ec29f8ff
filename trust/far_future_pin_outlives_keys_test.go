package trust_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/trust"
)

// A far-future time signed by compromised keys and pinned by an act that
// narrowed trust must not outlive every key behind it (TRUST-12).

// TestRevokingTwoCompromisedOfficersOneAtATimeUndoesTheirFarFutureTime:
// org.example needs 2 of its officers (e1, e2 honest; x, y compromised).
// x and y together sign a time a century ahead (a heartbeat of a line
// never installed): the installed bundle, which neither signed, is
// expired while they are trusted (TRUST-8's accepted risk). d36ff84 lets
// the act that drops such keys undo the time they alone signed
// (keptFloor), and revoking or removing both in one act does. Revoking
// them one at a time — how compromises are usually found — must too:
// dropping x pins the century because y, still trusted, signed it too,
// and that pin records that it rests on y (Installed.FloorKeys), so
// dropping y undoes it. Before, the pin was kept by max for good: the
// bundle stayed expired with no operator act that lifted it, though
// nobody still trusted vouched for that time (TRUST-12).
func TestRevokingTwoCompromisedOfficersOneAtATimeUndoesTheirFarFutureTime(t *testing.T) {
	e1, e2, x, y := seedKey(0x91), seedKey(0x92), seedKey(0x93), seedKey(0x94)
	setup := func(t *testing.T) (*trust.State, int64) {
		st := state(t, map[string][]string{"e1": {"org.example"}, "e2": {"org.example"}, "x": {"org.example"}, "y": {"org.example"}},
			map[string]ed25519.PrivateKey{"e1": e1, "e2": e2, "x": x, "y": y})
		st.Thresholds["org.example"] = 2
		in := st.Installed["org.example.translate"]
		_, m, ok := in.Manifest()
		if !ok || m.ExpiresAt == nil {
			t.Fatal("the translate sample should expire")
		}
		st = trust.RaiseFloors(st, m.ExpiresAt.Add(100*365*24*time.Hour), []string{did(x), did(y)})
		if trust.InstalledFloor(st, "org.example.translate") < m.ExpiresAt.Unix() {
			t.Fatal("precondition: x and y's century expires the bundle while they are trusted")
		}
		return st, m.ExpiresAt.Unix()
	}
	for _, c := range []struct {
		name             string
		together, oneBy1 func(t *testing.T, st *trust.State) *trust.State
	}{
		{"revocations",
			func(t *testing.T, st *trust.State) *trust.State {
				next, _, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(x), did(y)}, e1, e2), now)
				if err != nil {
					t.Fatal(err)
				}
				return next
			},
			func(t *testing.T, st *trust.State) *trust.State {
				st, _, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(x)}, e1, e2), now)
				if err != nil {
					t.Fatal(err)
				}
				st, _, err = trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(y)}, e1, e2), now)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}},
		{"trust rm",
			nil, // trust rm removes one key per act
			func(t *testing.T, st *trust.State) *trust.State {
				st, _, err := trust.RemoveKey(st, "x", true)
				if err != nil {
					t.Fatal(err)
				}
				st, _, err = trust.RemoveKey(st, "y", true)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.together != nil {
				st, exp := setup(t)
				if f := trust.InstalledFloor(c.together(t, st), "org.example.translate"); f >= exp {
					t.Fatalf("precondition: dropping x and y in one act undoes their century (floor %d, expiry %d)", f, exp)
				}
			}
			st, exp := setup(t)
			if f := trust.InstalledFloor(c.oneBy1(t, st), "org.example.translate"); f >= exp {
				t.Fatalf("x and y dropped one after the other (%s): the century they alone signed stays pinned on a bundle neither signed "+
					"(floor %s, expiry %s), while dropping both in one act undoes it; no operator act lifts the pin",
					c.name, time.Unix(f, 0).UTC().Format(time.RFC3339), time.Unix(exp, 0).UTC().Format(time.RFC3339))
			}
		})
	}
}

// TestCompromisedKeyCannotPinItsOwnFarFutureTimeByRaisingTheThreshold:
// x is one of three org.example officers (threshold 1). Compromised, it
// signs a time a century ahead — the case d36ff84 fixed: revoking x
// undoes it (keptFloor). But x, alone enough for a trust statement of its
// scope, first signs one raising the threshold to 2 (a narrowing act;
// three keys cover it). That act pins the century (x is still trusted
// by it, so its time is kept), and before, the owners' later revocation
// of x could not lift the pin: every installed org.example version stayed
// expired for good. The pin now records that it rests on x alone
// (Installed.FloorKeys), so revoking x undoes what only x signed,
// whatever narrowing acts ran while x was trusted (TRUST-12).
func TestCompromisedKeyCannotPinItsOwnFarFutureTimeByRaisingTheThreshold(t *testing.T) {
	e1, e2, x := seedKey(0x98), seedKey(0x99), seedKey(0x9a)
	st := state(t, map[string][]string{"e1": {"org.example"}, "e2": {"org.example"}, "x": {"org.example"}},
		map[string]ed25519.PrivateKey{"e1": e1, "e2": e2, "x": x})
	in := st.Installed["org.example.translate"]
	_, m, ok := in.Manifest()
	if !ok || m.ExpiresAt == nil {
		t.Fatal("the translate sample should expire")
	}
	st = trust.RaiseFloors(st, m.ExpiresAt.Add(100*365*24*time.Hour), []string{did(x)})
	st, _, err := trust.ApplyRotation(st, scopedRotation(t, "org.example", 1, 2, nil, x), now)
	if err != nil {
		t.Fatalf("x alone raises org.example's threshold: %v", err)
	}
	st, _, err = trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(x)}, e1, e2), now)
	if err != nil {
		t.Fatal(err)
	}
	if f := trust.InstalledFloor(st, "org.example.translate"); f >= m.ExpiresAt.Unix() {
		t.Fatalf("x raised the threshold before it was revoked: the century only x signed stays pinned (floor %s, expiry %s) "+
			"on a bundle x never signed, and its revocation no longer undoes it",
			time.Unix(f, 0).UTC().Format(time.RFC3339), m.ExpiresAt.UTC().Format(time.RFC3339))
	}
}
