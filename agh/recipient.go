package agh

import (
	"slices"

	"github.com/ampbundle/ampbundle/amp"
)

// checkRecipient refuses an envelope addressed (to, non-empty) to a peer
// that is not one of self, this receiver's names (AGH-3): the proof
// covers to, so a transfer meant for another peer, replayed here within
// the window, still verifies. The refusal does not quote to.
func checkRecipient(to string, self []string) error {
	if to == "" || slices.Contains(self, to) {
		return nil
	}
	return amp.Named(0, ErrNotARecipient, "the envelope is addressed to another peer")
}
