package bundlebuild

import (
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/compat"
)

// TestBridgeMediaTypeIsOneName: bundle owns the bridge media type (it no
// longer imports compat); a bridge that compat parses and bundle files
// under another media type would be read back as something else.
func TestBridgeMediaTypeIsOneName(t *testing.T) {
	if bundle.MediaTypeBridge != compat.BridgeMediaType {
		t.Fatalf("bundle.MediaTypeBridge %q, compat.BridgeMediaType %q", bundle.MediaTypeBridge, compat.BridgeMediaType)
	}
}
