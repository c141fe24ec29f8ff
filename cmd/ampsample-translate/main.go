package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxInput bounds what is read from stdin (the input schema allows 5,000
// characters of text).
const maxInput = 1 << 20

// params is the input of org.example.translate.text 2.1.0.
type params struct {
	Text      string `json:"text"`
	Source    string `json:"source"`
	Target    string `json:"target"`
	Formality string `json:"formality"`
}

// result is its output.
type result struct {
	Text           string `json:"text"`
	DetectedSource string `json:"detected_source"`
}

// phrasebook maps an English word to its translations, by language.
var phrasebook = map[string]map[string]string{
	"hello":     {"fr": "bonjour", "de": "hallo", "es": "hola", "it": "ciao", "nl": "hallo"},
	"goodbye":   {"fr": "au revoir", "de": "auf Wiedersehen", "es": "adiós", "it": "arrivederci", "nl": "tot ziens"},
	"thank you": {"fr": "merci", "de": "danke", "es": "gracias", "it": "grazie", "nl": "dank je"},
	"yes":       {"fr": "oui", "de": "ja", "es": "sí", "it": "sì", "nl": "ja"},
	"no":        {"fr": "non", "de": "nein", "es": "no", "it": "no", "nl": "nee"},
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ampsample-translate:", err)
		os.Exit(1)
	}
}

// run reads the params from in and writes the result to out.
func run(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(io.LimitReader(in, maxInput+1))
	if err != nil {
		return fmt.Errorf("cannot read the params: %w", err)
	}
	if len(data) > maxInput {
		return fmt.Errorf("the params are over %d bytes", maxInput)
	}
	var p params
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("the params are not a json object: %w", err)
	}
	return json.NewEncoder(out).Encode(translate(p))
}

// translate looks the text up in the phrasebook; a text it does not know
// comes back unchanged. The source language is "en" unless the caller
// named it.
func translate(p params) result {
	r := result{Text: p.Text, DetectedSource: "en"}
	if p.Source != "" {
		r.DetectedSource = p.Source
	}
	lang, _, _ := strings.Cut(p.Target, "-")
	if words, ok := phrasebook[strings.ToLower(strings.TrimSpace(p.Text))]; ok && r.DetectedSource == "en" {
		if t, ok := words[lang]; ok {
			r.Text = t
		}
	}
	return r
}
