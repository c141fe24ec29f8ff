package agh

import (
	"testing"
)

// TestTransferAddressedToAnotherPeerIsRefused: a transfer's to names the
// peer it is meant for, and only that peer takes it.
//
// Attack: the proof covers to, but ReceiveTransfer never compared it with
// the receiver, so a transfer that peer A received (or that a relay
// carried to A) could be replayed to peer B within the 300 s window, and
// B took a capability as sent to it by a sender who never addressed it.
//
// Should: a transfer whose to is set and is not one of the receiver's own
// names (ReceiveOptions.Self) is refused with not_a_recipient before
// anything of it is used, the proof still checked first when it is
// present; a receiver that gives no names refuses every addressed
// transfer; one without to (the channel's) is taken by any receiver (AGH-3).
func TestTransferAddressedToAnotherPeerIsRefused(t *testing.T) {
	key := testKey(1)
	toA := resign(t, signed(t, key), map[string]string{"to": `"designer.session-19"`}, key, keyID(key))
	broadcast := signed(t, key)
	for _, c := range []struct {
		doc  string
		env  []byte
		self []string
		want string
	}{
		{"addressed to A, received by A", toA, []string{"designer.session-19"}, ""},
		{"addressed to A, received by A under a second name", toA, []string{"did:key:zB", "designer.session-19"}, ""},
		{"addressed to A, replayed to B", toA, []string{"ops-coordinator.session-42"}, string(ErrNotARecipient)},
		{"addressed to A, B differs only in case", toA, []string{"Designer.session-19"}, string(ErrNotARecipient)},
		{"addressed to A, receiver names none", toA, nil, string(ErrNotARecipient)},
		{"no to, received by B", broadcast, []string{"ops-coordinator.session-42"}, ""},
		{"no to, receiver names none", broadcast, nil, ""},
	} {
		o := recvOpts()
		o.Self = c.self
		tr, err := ReceiveTransfer(c.env, o)
		if got := errName(err); got != c.want {
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
			continue
		}
		if err != nil && tr != nil {
			t.Errorf("%s: refused but returned a transfer", c.doc)
		}
	}
	// A forged to is a bad proof, not a recipient question.
	forged := resign(t, toA, map[string]string{"to": `"ops-coordinator.session-42"`}, nil, "")
	o := recvOpts()
	o.Self = []string{"ops-coordinator.session-42"}
	if _, err := ReceiveTransfer(forged, o); errName(err) != string(ErrBadProof) {
		t.Errorf("a to rewritten after signing: %v, want %s", err, ErrBadProof)
	}
}
