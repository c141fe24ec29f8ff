package ledger

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// syncGate is a fdatasync that, once armed, signals that it was entered
// and blocks until released: the test holds the leader between its
// reclaim and its apply.
type syncGate struct {
	mu               sync.Mutex
	entered, release chan struct{}
}

func (g *syncGate) arm() (entered, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entered, g.release = make(chan struct{}), make(chan struct{})
	return g.entered, g.release
}

func (g *syncGate) sync(*os.File) error {
	g.mu.Lock()
	entered, release := g.entered, g.release
	g.entered, g.release = nil, nil
	g.mu.Unlock()
	if entered != nil {
		close(entered)
		<-release
	}
	return nil
}

func waitChan(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// queued is how many writers wait for the next group.
func (s *WALStore) queued() int {
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	return len(s.gc.queue)
}

// TestRefundsInFlightNeverPassShare: before review 100, a Finish
// refunded its reservation less the reply up front (settle), before its
// record was applied; when the leader reclaims the entry meanwhile (its
// handler outlived the message: overdue, AGENT-15), it releases the whole
// cost and the refund is taken back only when the record is applied, one
// fdatasync later. AGENT-23 bounds what a concurrent reservation of that
// caller may pass its share by to "the refund (one reservation)". Attack:
// a caller whose several overdue handlers finish together (one group)
// has all their refunds counted below zero at once, and every
// reservation it makes during that fdatasync is checked against that
// negative balance: with four reservations finishing, eight new ones are
// accepted, and once the group is applied the caller holds its share and
// almost four reservations more (bounded only by a whole share, and the
// budget likewise by the sum of every caller's refunds in flight). What
// should happen (docs/SPEC-DECISIONS.md AGENT-23, amended): whatever the
// order of Finish, reclaim and reservation, a caller never holds more
// than its share: a refund is counted when its record is applied to the
// entry it replaces, never before.
func TestRefundsInFlightNeverPassShare(t *testing.T) {
	c := newRestartClock()
	lim := Limits{Budget: 1 << 20, PerCaller: 16 << 10, ReplyReserve: MinReplyReserve}
	gate := &syncGate{}
	o := c.opts(lim)
	o.Now = c.wall.Now
	s, err := openWAL(filepath.Join(t.TempDir(), "l.wal"), o, gate.sync)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const sender, reserve, overdue = "did:key:zOverdue", 3500, 4
	cost := entryCost(Key{Sender: sender}, reserve)
	for i := range overdue {
		if err := s.MarkRunningWithin(Key{sender, id(i)}, c.wall.Now().Add(time.Second), reserve); err != nil {
			t.Fatal(err)
		}
	}
	// A commit of another caller holds the leader in its fdatasync while
	// the handlers, overdue, finish: their Finishes queue up together.
	entered, release := gate.arm()
	other := make(chan error, 1)
	go func() { other <- s.MarkRunning(Key{"did:key:zOther", id(100)}, c.wall.Now().Add(time.Hour)) }()
	waitChan(t, entered, "the first group's sync")
	c.tick(2*time.Second, 2*time.Second)
	entered2, release2 := gate.arm()
	finished := make(chan error, overdue)
	for i := range overdue {
		go func() { finished <- s.Finish(Key{sender, id(i)}, []byte("r")) }()
	}
	for deadline := time.Now().Add(5 * time.Second); s.queued() < overdue; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Finishes did not queue")
		}
	}
	close(release)
	if err := <-other; err != nil {
		t.Fatal(err)
	}
	// The group of Finishes: its leader reclaimed the four entries and is
	// in its fdatasync. The caller reserves meanwhile, until refused.
	waitChan(t, entered2, "the Finishes' group's sync")
	accepted := 0
	marked := make(chan error, 64)
	for j := 0; j < 64; j++ {
		before := s.queued()
		go func() {
			marked <- s.MarkRunningWithin(Key{sender, id(200 + j)}, c.wall.Now().Add(time.Hour), reserve)
		}()
		refused := false
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Microsecond) {
			if s.queued() > before {
				accepted++
				break
			}
			select {
			case err := <-marked:
				if err == nil {
					t.Fatal("a reservation was committed while the leader was held")
				}
				refused = true
			default:
			}
			if refused {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a reservation neither queued nor was refused")
			}
		}
		if refused {
			break
		}
	}
	close(release2)
	for range overdue {
		<-finished // gone (ErrTicketUsed): the entries were reclaimed
	}
	for range accepted {
		if err := <-marked; err != nil {
			t.Fatal(err)
		}
	}
	var held int64
	s.idx.RLock()
	for k, e := range s.m {
		if k.Sender == sender {
			held += e.cost(k)
		}
	}
	s.idx.RUnlock()
	if held > lim.PerCaller {
		t.Fatalf("the caller holds %d bytes in %d entries (%d accepted during one fdatasync), over its share of %d by %d (%.1f reservations of %d)",
			held, held/cost, accepted, lim.PerCaller, held-lim.PerCaller, float64(held-lim.PerCaller)/float64(cost), cost)
	}
	checkAccountsExact(t, s, "after the groups")
}
