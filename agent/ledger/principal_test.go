package ledger

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// shared charges every sender whose name starts with "anon" to one
// principal.
func shared(sender string) string {
	if strings.HasPrefix(sender, "anon") {
		return "*"
	}
	return sender
}

// TestSendersOfOnePrincipalShareOneQuota: with SetPrincipal, the senders
// of one principal are held to one per-caller share together, for what
// was recorded before SetPrincipal (a reopened file) too, while another
// principal keeps its own share (threat: identities that cost nothing
// each getting a full share of the ledger).
func TestSendersOfOnePrincipalShareOneQuota(t *testing.T) {
	lim := Limits{Budget: 4 << 20, PerCaller: 3 * entryCost(Key{Sender: "anon-00"}, DefaultReplyReserve), ReplyReserve: DefaultReplyReserve}
	for name, open := range stores(lim) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s, _ := open(t, c)
			l, err := New(s, Options{Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			run := func(sender string, n int) error {
				st, err := l.Start(sender, id(n), t0.Add(time.Hour))
				if err != nil {
					return err
				}
				if err := st.Ticket.Running(); err != nil {
					st.Ticket.Abandon()
					return err
				}
				return nil
			}
			// Recorded while each sender is its own principal.
			for i, sender := range []string{"anon-01", "anon-02"} {
				if err := run(sender, i); err != nil {
					t.Fatal(err)
				}
			}
			l.SetPrincipal(shared)
			if err := run("anon-03", 3); err != nil {
				t.Fatalf("third of three shares: %v", err)
			}
			if err := run("anon-04", 4); amp.NameOf(err) != ErrCallerFull {
				t.Fatalf("a fourth anonymous sender got %v, want %s", err, ErrCallerFull)
			}
			if err := run("did:key:named", 5); err != nil {
				t.Fatalf("a named sender was refused: %v", err)
			}
		})
	}
}

// TestVolatileShareKeepsOtherPrincipalsReplies: one principal filling the
// volatile cache evicts only its own oldest replies, never another
// principal's (threat: a PING flood flushing the replies kept for others).
func TestVolatileShareKeepsOtherPrincipalsReplies(t *testing.T) {
	c := newClock()
	l, err := New(NewMemory(Limits{}), Options{Now: c.Now, VolatileEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	l.SetPrincipal(shared)
	finish := func(sender string, n int, reply []byte) {
		st, err := l.Start(sender, id(n), t0.Add(time.Hour))
		if err != nil || st.State != Fresh {
			t.Fatalf("start %s %d: %v %v", sender, n, st.State, err)
		}
		if err := st.Ticket.Finish(reply); err != nil {
			t.Fatal(err)
		}
	}
	finish("did:key:named", 0, []byte("kept"))
	for i := 1; i <= 100; i++ {
		finish("anon-"+strings.Repeat("x", i%7), i, []byte("pong"))
	}
	st, err := l.Start("did:key:named", id(0), t0.Add(time.Hour))
	if err != nil || st.State != Done || !bytes.Equal(st.Reply, []byte("kept")) {
		t.Fatalf("the named sender's reply is %v %q after the flood", st.State, st.Reply)
	}
	l.mu.Lock()
	anon := l.volatile.buckets["*"].entries
	l.mu.Unlock()
	if anon > 16/8 {
		t.Fatalf("the shared principal holds %d volatile entries, more than its share", anon)
	}
}
