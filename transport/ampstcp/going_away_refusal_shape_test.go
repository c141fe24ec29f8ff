package ampstcp

import (
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestAGoingAwayRefusalWhoseNameWasBareCarriesItsCodeAndText: a message
// given to a connection that received GOAWAY is refused going_away, and
// RoundTrip hands that refusal to its caller after its third try. The
// refusal was the bare name (amp.ErrName), which carries no code and no
// text: amp.CodeOf and amp.NameOf read it as 5001 internal_error "internal
// error", where every other refusal of the binding carries its name, its
// code and a fixed text (docs/TRANSPORT.md §5, §6: a connection's end is
// 2002, retried). It is now going_away, 2002, with its text.
func TestAGoingAwayRefusalWhoseNameWasBareCarriesItsCodeAndText(t *testing.T) {
	c := &clientConn{pending: map[[16]byte]chan result{}, goingAway: true}
	err := c.register([16]byte{1}, make(chan result, 1))
	if !errors.Is(err, errGoingAway) {
		t.Fatalf("register on a connection going away: %v; want going_away", err)
	}
	if got := amp.NameOf(err); got != errGoingAway {
		t.Errorf("name %q; want %q", got, errGoingAway)
	}
	if got := amp.CodeOf(err); got != amp.CodeEndpointUnreachable {
		t.Errorf("code %d; want %d (a connection's end: retried)", got, amp.CodeEndpointUnreachable)
	}
	if !amp.CodeOf(err).Retryable() {
		t.Errorf("code %d is not retryable", amp.CodeOf(err))
	}
	var e *amp.Error
	if !errors.As(err, &e) || e.Message == "" || e.Final {
		t.Errorf("refusal %#v; want an *amp.Error with a text, not final", err)
	}
	if len(c.pending) != 0 {
		t.Errorf("%d messages registered on a connection going away", len(c.pending))
	}
}
