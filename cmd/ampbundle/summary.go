package main

import (
	"fmt"
	"io"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// summary is the JSON view of a bundle shared by build, verify and
// inspect: the catalog's manifest view.
type summary = catalog.ManifestView

// summarize is the JSON view of a bundle shared by build, verify and
// inspect: the catalog's manifest view, the one the catalog's bundle page
// shows, so the page and the CLI cannot disagree about a bundle.
func summarize(file string, m *bundle.Manifest, sigs []catalog.ManifestSignature, checked bool) summary {
	s := catalog.NewManifestView(m, sigs, checked)
	s.File = file
	return s
}

// printManifest writes the human form of s. Its text comes from the
// bundle file, which inspect shows before any signature is checked: each
// field goes through cliutil.Sanitize.
func printManifest(w io.Writer, s summary) {
	S := cliutil.Sanitize
	fmt.Fprintf(w, "bundle     %s version %d\n", S(s.BundleID), s.Version)
	fmt.Fprintf(w, "created    %s\n", S(s.CreatedAt))
	if s.ExpiresAt != "" {
		fmt.Fprintf(w, "expires    %s\n", S(s.ExpiresAt))
	}
	fmt.Fprintf(w, "publisher  %s\n", S(s.Publisher))
	for _, sig := range s.Signatures {
		state := "NOT CHECKED"
		switch {
		case sig.Verified:
			state = "verified, trusted as " + S(sig.TrustedAs)
		case s.SignatureChecked:
			state = "not by a trusted key"
		}
		fmt.Fprintf(w, "signed by  %s (%s)\n", S(sig.KID), state)
	}
	fmt.Fprintf(w, "artifacts  %d\n", len(s.Artifacts))
	for _, a := range s.Artifacts {
		fmt.Fprintf(w, "  %-60s %8d  %s:%s…  %s\n", S(a.Key), a.Size, S(a.HashAlg), a.Hash[:16], S(a.MediaType))
	}
	fmt.Fprintf(w, "capabilities %d\n", len(s.Capabilities))
	for _, c := range s.Capabilities {
		line := "  " + S(c.ID)
		if len(c.SupportedRanges) > 0 {
			line += "  supports " + cliutil.SanitizeJoin(c.SupportedRanges, ", ")
		}
		if len(c.DeprecatedRanges) > 0 {
			line += "  deprecates " + cliutil.SanitizeJoin(c.DeprecatedRanges, ", ")
		}
		fmt.Fprintln(w, line)
	}
	for typ, name := range s.Aliases {
		fmt.Fprintf(w, "alias      %s -> %s\n", S(typ), S(name))
	}
}
