// Package dashboard reads the queries of deploy/monitoring/dashboard.json, for the tests that
// parse them and run them over recordings.
package dashboard

import (
	"encoding/json"
	"fmt"
	"os"
)

// Dashboard is what the tests read of a Grafana dashboard: its variables and its panels'
// queries.
type Dashboard struct {
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// Read reads the dashboard in file.
func Read(file string) (*Dashboard, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &d, nil
}

// Query is the query of the panel titled title that has one; ok is false when there is no
// such panel.
func (d *Dashboard) Query(title string) (expr string, ok bool) {
	for _, p := range d.Panels {
		if p.Title == title && len(p.Targets) == 1 {
			return p.Targets[0].Expr, true
		}
	}
	return "", false
}
