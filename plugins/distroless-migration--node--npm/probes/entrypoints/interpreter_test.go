package entrypoints

import "testing"

func TestInterpreter(t *testing.T) {
	t.Parallel()
	for shebang, want := range map[string][2]string{
		"#!/bin/sh":                 {"sh", "shell"},
		"#!/usr/bin/env bash":       {"bash", "shell"},
		"#!/usr/bin/env -S bash -e": {"bash", "shell"},
		"#!/usr/bin/env node":       {"node", "env"},
		"#!/usr/local/bin/node":     {"node", "node"},
		"#!/usr/bin/python3":        {"python3", "other"},
	} {
		name, kind := interpreter(shebang)
		if name != want[0] || kind != want[1] {
			t.Errorf("interpreter(%q) = %s, %s; want %s, %s", shebang, name, kind, want[0], want[1])
		}
	}
}
