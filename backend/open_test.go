package backend

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/tensor"
)

func TestOpen(t *testing.T) {
	cudaOK := cuda.Probe().OK()
	tests := []struct {
		device, precision string
		wantName          string // "" means an error is expected
		wantInLog         string
		wantInErr         string
	}{
		{"cpu", "", "cpu", "device cpu", ""},
		{"CPU", "fp32", "cpu", "device cpu", ""},
		{"tpu", "", "", "", "unknown device"},
		{"cpu", "fp16", "", "", "precision"},
		// bf16 on the CPU is refused, never run in fp32 instead.
		{"cpu", "bf16", "", "", "CPU backend (device cpu) computes in fp32 only"},
	}
	if cudaOK {
		tests = append(tests,
			struct{ device, precision, wantName, wantInLog, wantInErr string }{"auto", "", "cuda", "auto -> cuda", ""},
			struct{ device, precision, wantName, wantInLog, wantInErr string }{"cuda", "fp32", "cuda", "device cuda", ""})
	} else {
		tests = append(tests,
			struct{ device, precision, wantName, wantInLog, wantInErr string }{"auto", "", "cpu", "auto -> cpu (cuda unavailable", ""},
			struct{ device, precision, wantName, wantInLog, wantInErr string }{"cuda", "", "", "", "--device cpu"},
			// auto without CUDA does not fall back to the CPU in bf16.
			struct{ device, precision, wantName, wantInLog, wantInErr string }{"auto", "bf16", "", "", "found no usable CUDA GPU"})
	}
	for _, tc := range tests {
		t.Run(tc.device+"/"+tc.precision, func(t *testing.T) {
			b, log, err := openNamed(tc.device, tc.precision)
			if tc.wantName == "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
					t.Fatalf("Open error = %v, want one containing %q", err, tc.wantInErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Name() != tc.wantName || !strings.Contains(log, tc.wantInLog) {
				t.Fatalf("Open = %s, %q; want %s with %q", b.Name(), log, tc.wantName, tc.wantInLog)
			}
			if c, ok := b.(interface{ Close() error }); ok {
				c.Close()
			}
		})
	}
}

// openNamed parses the names as a command does and opens the backend.
func openNamed(device, precision string) (tensor.Backend, string, error) {
	d, err := ParseDevice(device)
	if err != nil {
		return nil, "", err
	}
	p, err := ParsePrecision(precision)
	if err != nil {
		return nil, "", err
	}
	return Open(d, p)
}

func TestDeviceAndPrecisionNamesRoundTrip(t *testing.T) {
	for _, name := range Devices {
		d, err := ParseDevice(name)
		if err != nil || d.String() != name {
			t.Errorf("ParseDevice(%q) = %v, %v", name, d, err)
		}
	}
	for _, name := range []string{"tf32", "fp32"} {
		p, err := ParsePrecision(name)
		if err != nil || p.String() != name {
			t.Errorf("ParsePrecision(%q) = %v, %v", name, p, err)
		}
	}
	if d, err := ParseDevice("GPU"); err != nil || d != DeviceCUDA {
		t.Errorf("ParseDevice(GPU) = %v, %v; want cuda", d, err)
	}
	if _, err := ParsePrecision("fp16"); err == nil {
		t.Error("ParsePrecision accepted fp16")
	}
}
