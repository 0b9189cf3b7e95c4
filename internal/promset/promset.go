// Package promset makes a fixed set of Prometheus collectors one
// prometheus.Collector, so that a component with several metrics is
// registered in one line.
package promset

import "github.com/prometheus/client_golang/prometheus"

// Set is the collectors of one component, collected together.
type Set []prometheus.Collector

var _ prometheus.Collector = Set(nil)

// Describe implements prometheus.Collector.
func (s Set) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (s Set) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s {
		c.Collect(ch)
	}
}
