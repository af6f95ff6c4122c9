// Package plugins links in every plugin listed in plugin.cfg and sets CoreDNS's directive
// order to that file's. The binary imports it, and so do in-process tests, so both run the
// same plugin chain.
package plugins

//go:generate go run gen.go
