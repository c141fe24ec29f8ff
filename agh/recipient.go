package agh

import (
	"slices"

	"github.com/ampbundle/ampbundle/amp"
)

// checkRecipient refuses an envelope posted on a channel this receiver
// does not listen on (channels; DefaultChannel when none is named:
// AGH-11), or addressed (to, non-empty) to a peer that is not one of
// self, this receiver's names (AGH-3): the proof covers channel and to, so
// a transfer posted on another channel, or meant for another peer,
// replayed here within the window, still verifies. The refusal quotes
// neither.
func checkRecipient(channel, to string, channels, self []string) error {
	if len(channels) == 0 {
		channels = []string{DefaultChannel}
	}
	if !slices.Contains(channels, channel) {
		return amp.Named(0, ErrNotARecipient, "the envelope is posted on a channel this receiver does not listen on")
	}
	if to == "" || slices.Contains(self, to) {
		return nil
	}
	return amp.Named(0, ErrNotARecipient, "the envelope is addressed to another peer")
}
