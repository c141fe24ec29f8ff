package agh

import (
	"strings"
	"testing"
)

// TestTransferReplayedOnAnotherChannelIsRefused: a transfer
// without to is the channel's, and only that channel's.
//
// Attack: channel is signed, but ReceiveTransfer never compared it with
// anything of the receiver's: a transfer without to that the sender
// posted on channel "builders" (any receiver there takes it) is carried
// by anyone who saw it, within the 300 s window, to a receiver listening
// on another channel, which takes it as posted to it. A replay cache
// keyed by channel and id counts it fresh there too.
//
// Before AGH-11: accepted, Verified, on a receiver that listens on the
// default channel only.
//
// Should: a receiver names the channels it listens on (DefaultChannel
// when it names none), and an envelope on any other channel, addressed
// or not, is not_a_recipient after the proof and before anything is used.
func TestTransferReplayedOnAnotherChannelIsRefused(t *testing.T) {
	key := testKey(1)
	onBuilders := resign(t, signed(t, key), map[string]string{"channel": `"builders"`}, key, keyID(key))
	tr, err := ReceiveTransfer(onBuilders, recvOpts())
	if errName(err) != string(ErrNotARecipient) {
		t.Fatalf("a transfer posted on builders, replayed to a receiver of %s: %v (transfer %+v), want %s", DefaultChannel, err, tr, ErrNotARecipient)
	}
	if tr != nil {
		t.Fatal("refused but returned a transfer")
	}
	if _, err := ReceiveTransfer(signed(t, key), recvOpts()); err != nil {
		t.Fatalf("a transfer on the receiver's own channel: %v", err)
	}
	toB := resign(t, onBuilders, map[string]string{"to": `"ops-coordinator.session-42"`}, key, keyID(key))
	for _, c := range []struct {
		doc      string
		env      []byte
		channels []string
		want     string
	}{
		{"builders, received on builders", onBuilders, []string{"builders"}, ""},
		{"builders, received on ops and builders", onBuilders, []string{"ops", "builders"}, ""},
		{"builders, received on ops", onBuilders, []string{"ops"}, string(ErrNotARecipient)},
		{"builders, receiver differs only in case", onBuilders, []string{"Builders"}, string(ErrNotARecipient)},
		{"builders, addressed to B, B on ops", toB, []string{"ops"}, string(ErrNotARecipient)},
		{"builders, addressed to B, B on builders", toB, []string{"builders"}, ""},
		{"default channel, receiver on builders only", signed(t, key), []string{"builders"}, string(ErrNotARecipient)},
	} {
		o := recvOpts()
		o.Channels, o.Self = c.channels, []string{"ops-coordinator.session-42"}
		tr, err := ReceiveTransfer(c.env, o)
		if got := errName(err); got != c.want {
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
		if err != nil && (tr != nil || strings.Contains(err.Error(), "builders")) {
			t.Errorf("%s: refused but returned a transfer, or quoted the channel: %v", c.doc, err)
		}
	}
	// A channel rewritten in transit is a bad proof, not a channel question.
	forged := resign(t, onBuilders, map[string]string{"channel": `"ops"`}, nil, "")
	o := recvOpts()
	o.Channels = []string{"ops"}
	if _, err := ReceiveTransfer(forged, o); errName(err) != string(ErrBadProof) {
		t.Errorf("a channel rewritten after signing: %v, want %s", err, ErrBadProof)
	}
}
