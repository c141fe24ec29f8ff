// Command ampsample-translate is the sample handler program of the README's
// by-hand section: it implements org.example.translate.text 2.1.0 of the
// sample bundle in testdata/bundles/translate for `ampagent serve`.
//
// Like every handler program, it reads the invocation's params as one JSON
// object on stdin (already valid against the capability's input schema:
// "text", "target", and optionally "source" and "formality") and prints the
// result as one JSON object on stdout ("text" and "detected_source", which
// the agent checks against the output schema). It knows a handful of words
// (a phrasebook, not a translator): a known word is translated, anything
// else comes back unchanged. A non-zero exit is a failed invocation; what
// it prints on stderr goes to the agent's log, never to the caller.
package main
