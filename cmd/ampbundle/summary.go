package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// summary is the JSON view of a bundle shared by build, verify and inspect.
type summary struct {
	File             string            `json:"file,omitempty"`
	BundleID         string            `json:"bundle_id"`
	Version          uint64            `json:"version"`
	CreatedAt        string            `json:"created_at"`
	ExpiresAt        string            `json:"expires_at,omitempty"`
	Publisher        string            `json:"publisher"`
	SignatureChecked bool              `json:"signature_checked"`
	Signatures       []sigInfo         `json:"signatures"`
	Artifacts        []artInfo         `json:"artifacts"`
	Capabilities     []capInfo         `json:"capabilities"`
	Aliases          map[string]string `json:"aliases,omitempty"`
	// Delta is set for a delta bundle: its base and what it takes from it.
	Delta *deltaJSON `json:"delta,omitempty"`
}

type sigInfo struct {
	KID       string `json:"kid"`
	Verified  bool   `json:"verified"`
	TrustedAs string `json:"trusted_as,omitempty"`
}

type artInfo struct {
	Key       string `json:"key"`
	MediaType string `json:"media_type"`
	Size      uint64 `json:"size"`
	HashAlg   string `json:"hash_alg"`
	Hash      string `json:"hash"`
}

type capInfo struct {
	ID               string   `json:"id"`
	SupportedRanges  []string `json:"supported_ranges,omitempty"`
	DeprecatedRanges []string `json:"deprecated_ranges,omitempty"`
}

func summarize(file string, m *bundle.Manifest, sigs []sigInfo, checked bool) summary {
	s := summary{File: file, BundleID: m.BundleID, Version: m.Version, CreatedAt: m.CreatedAt.Format(time.RFC3339),
		Publisher: m.Publisher, SignatureChecked: checked, Signatures: sigs, Aliases: m.Aliases,
		Artifacts: []artInfo{}, Capabilities: []capInfo{}}
	if m.ExpiresAt != nil {
		s.ExpiresAt = m.ExpiresAt.Format(time.RFC3339)
	}
	for _, a := range m.Artifacts {
		s.Artifacts = append(s.Artifacts, artInfo{Key: a.Key, MediaType: a.MediaType, Size: a.Size, HashAlg: a.HashAlg, Hash: hex.EncodeToString(a.Hash)})
	}
	for _, d := range m.Capabilities {
		ci := capInfo{ID: d.ID().String()}
		for _, r := range d.SupportedRanges {
			ci.SupportedRanges = append(ci.SupportedRanges, r.String())
		}
		for _, r := range d.DeprecatedRanges {
			ci.DeprecatedRanges = append(ci.DeprecatedRanges, r.String())
		}
		s.Capabilities = append(s.Capabilities, ci)
	}
	return s
}

// print writes the human form. Its text comes from the bundle file, which
// inspect shows before any signature is checked: each field goes through
// cliutil.Sanitize.
func (s summary) print(w io.Writer) {
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
