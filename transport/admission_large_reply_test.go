package transport

import "testing"

// TestRepliesOfLargeBodiesStillLeaveSmallBodiesTheirEighth: once the
// agent answers, Admission.Answer gives back a large body's charge,
// large part included, and charges its reply — of the same size here —
// as small bytes (a.large untouched). Large bodies answered one after the
// other, their replies unread (held up to the 30 s write bound, or the
// grace for a peer that reads nothing), so fill the whole budget, the
// eighth kept for small bodies included: the next large body counts as
// "alone" (a.large == 0) and takes what is left, and every small POST of
// everyone is 503. Before the mend a large body's charge stayed large
// until its answer was written, so the large ones together never passed
// budget - SmallReserve (TestSmallBodiesKeepAnEighthOfTheHTTPBudget).
// Answer charges a reply larger than SmallBody to the large part too
// (and ReleaseReply gives it back there), so that what large bodies
// become still counts against their share of the budget.
func TestRepliesOfLargeBodiesStillLeaveSmallBodiesTheirEighth(t *testing.T) {
	const budget = 64 << 20
	a := NewAdmission(64, 16, budget, budget/4)
	for _, p := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"} {
		if a.Enter(p) != "" {
			t.Fatal("not admitted")
		}
		// Each sends all of a 16 MiB body but its last chunk, and is
		// answered with a reply of that size, which it does not read.
		held := int64(0)
		for held < budget/4-SmallBody && a.ChargeServerLarge(SmallBody, held) {
			held += SmallBody
		}
		a.Answer(p, 0, held, held, held)
	}
	if a.Enter("10.0.0.9") != "" || !a.ChargeServer(SmallBody+1) {
		t.Fatalf("a small body does not fit: the replies of large bodies and a large body hold %d of %d bytes, "+
			"SmallReserve (%d) included", a.Bytes(), budget, SmallReserve(budget))
	}
}

// TestReleasedLargeRepliesGiveBackTheirLargePart: a large reply given back
// (written, or its peer cut off) gives back its large part too, so that a
// large body alone fits the whole budget again afterwards.
func TestReleasedLargeRepliesGiveBackTheirLargePart(t *testing.T) {
	const budget = 8 << 20
	a := NewAdmission(4, 4, budget, budget)
	if a.Enter("10.0.0.1") != "" || !a.ChargeServerLarge(budget/2, 0) {
		t.Fatal("not admitted")
	}
	a.Answer("10.0.0.1", 0, budget/2, budget/2, budget/2)
	a.ReleaseReply("10.0.0.1", budget/2)
	if a.Bytes() != 0 {
		t.Fatalf("%d bytes still held", a.Bytes())
	}
	if a.Enter("10.0.0.2") != "" || !a.ChargeServerLarge(budget, 0) {
		t.Fatal("a large body alone does not fit an idle server: a released reply left its large part charged")
	}
}
