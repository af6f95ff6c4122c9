package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// shippedMemory is the memory deploy/ gives a gatewaydns pod: the container's limit and its
// GOMEMLIMIT. The base Deployment sets them for every overlay (tests/deploy/static_test.go
// holds each overlay to them) and the chart's default values for every role; phase B runs the
// pod with this GOMEMLIMIT and holds its peak to this limit, read from the files, not copied.
type shippedMemory struct {
	limit      int64  // bytes
	limitText  string // as written, e.g. 448Mi
	goMemLimit string // e.g. 320MiB
}

const (
	baseDeployment = "deploy/base/deployment.yaml"
	chartValues    = "deploy/chart/values.yaml"
	deployReadme   = "deploy/README.md"
)

// readShippedMemory reads the limit and GOMEMLIMIT from the base Deployment and the chart's
// values under root, and fails when the two disagree: then no one limit is "the shipped" one.
func readShippedMemory(root string) (shippedMemory, error) {
	base, err := baseMemory(filepath.Join(root, baseDeployment))
	if err != nil {
		return base, err
	}
	chart, err := chartMemory(filepath.Join(root, chartValues))
	if err != nil {
		return base, err
	}
	if base.limitText != chart.limitText || base.goMemLimit != chart.goMemLimit {
		return base, fmt.Errorf("%s ships limit %s, GOMEMLIMIT %s; %s ships %s, %s: which one does a pod get?",
			baseDeployment, base.limitText, base.goMemLimit, chartValues, chart.limitText, chart.goMemLimit)
	}
	return base, nil
}

func baseMemory(file string) (shippedMemory, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return shippedMemory{}, err
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		return shippedMemory{}, fmt.Errorf("%s: %w", file, err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "coredns" {
			continue
		}
		m := shippedMemory{limitText: c.Resources.Limits.Memory().String(), limit: c.Resources.Limits.Memory().Value()}
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				m.goMemLimit = e.Value
			}
		}
		return m, m.check(file)
	}
	return shippedMemory{}, fmt.Errorf("%s: no container coredns", file)
}

func chartMemory(file string) (shippedMemory, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return shippedMemory{}, err
	}
	var v struct {
		Resources struct {
			Limits struct {
				Memory string `json:"memory"`
			} `json:"limits"`
		} `json:"resources"`
		GoMemLimit string `json:"goMemLimit"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		return shippedMemory{}, fmt.Errorf("%s: %w", file, err)
	}
	m := shippedMemory{limitText: v.Resources.Limits.Memory, goMemLimit: v.GoMemLimit}
	if q, err := resource.ParseQuantity(v.Resources.Limits.Memory); err == nil {
		m.limit = q.Value()
	}
	return m, m.check(file)
}

func (m shippedMemory) check(file string) error {
	if m.limit <= 0 || m.goMemLimit == "" {
		return fmt.Errorf("%s: no memory limit (%q) or no GOMEMLIMIT (%q)", file, m.limitText, m.goMemLimit)
	}
	return nil
}

// readmeMiB is the figure deploy/README.md's Memory table gives in the row whose first cell
// begins with label: the table the operators size pods by.
func readmeMiB(root, label string) (float64, error) {
	file := filepath.Join(root, deployReadme)
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		if len(cells) != 2 || !strings.HasPrefix(strings.TrimSpace(cells[0]), label) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(cells[1]), 64)
		if err != nil {
			return 0, fmt.Errorf("%s: the row %q holds %q, not MiB", file, label, cells[1])
		}
		return v, nil
	}
	return 0, fmt.Errorf("%s: no row %q in a table of two columns", file, label)
}
