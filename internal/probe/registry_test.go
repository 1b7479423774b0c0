package probe

import (
	"context"
	"testing"
)

type stub struct{ d Desc }

func (s stub) Desc() Desc { return s.d }
func (s stub) Run(context.Context, *Repo, *Context) (Output, error) {
	return Output{Confidence: High}, nil
}

func okDesc(name string) Desc {
	return Desc{Name: name, Version: "1", Heaviness: Light, CacheStrategy: CacheNone, NewFacts: func() any { return new(struct{}) }}
}

func TestRegistryRegister(t *testing.T) {
	t.Parallel()
	mod := func(f func(*Desc)) Desc { d := okDesc("p"); f(&d); return d }
	tests := []struct {
		name    string
		desc    Desc
		wantErr bool
	}{
		{"valid", okDesc("p"), false},
		{"bad name", mod(func(d *Desc) { d.Name = "Bad-Name" }), true},
		{"no version", mod(func(d *Desc) { d.Version = "" }), true},
		{"bad heaviness", mod(func(d *Desc) { d.Heaviness = "medium" }), true},
		{"zero heaviness", mod(func(d *Desc) { d.Heaviness = "" }), true},
		{"bad cache strategy", mod(func(d *Desc) { d.CacheStrategy = "lru" }), true},
		{"content without inputs", mod(func(d *Desc) { d.CacheStrategy = CacheContent }), true},
		{"absolute input", mod(func(d *Desc) { d.CacheStrategy = CacheContent; d.DeclaredInputs = []string{"/etc/passwd"} }), true},
		{"escaping input", mod(func(d *Desc) { d.CacheStrategy = CacheContent; d.DeclaredInputs = []string{"../x"} }), true},
		{"untyped facts", mod(func(d *Desc) { d.NewFacts = nil }), true},
		{"content with inputs", mod(func(d *Desc) { d.CacheStrategy = CacheContent; d.DeclaredInputs = []string{"**/Dockerfile"} }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := NewRegistry().Register(stub{tt.desc})
			if (err != nil) != tt.wantErr {
				t.Errorf("Register() error = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

func TestRegistryRejectsDuplicate(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	r.MustRegister(stub{okDesc("p")})
	if err := r.Register(stub{okDesc("p")}); err == nil {
		t.Fatal("second Register of the same name succeeded")
	}
	if err := r.Register(nil); err == nil {
		t.Fatal("Register(nil) succeeded")
	}
}

func TestOutputValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		out     Output
		wantErr bool
	}{
		{"high", Output{Confidence: High}, false},
		{"low with reason", Output{Confidence: Low, Reason: "sandbox_unavailable"}, false},
		{"low without reason", Output{Confidence: Low}, true},
		{"medium without reason", Output{Confidence: Medium}, true},
		{"bad reason", Output{Confidence: Low, Reason: "Not Typed"}, true},
		{"no confidence", Output{}, true},
		{"unknown confidence", Output{Confidence: "sure"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.out.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() error = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}
