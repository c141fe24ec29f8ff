package cliutil

import (
	"net/http"
	"time"
)

// SideServer is the HTTP server of a listener of its own beside a
// command's main one (metrics, the catalog): h alone at path, with short
// timeouts and small headers.
func SideServer(path string, h http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle(path, h)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
}
