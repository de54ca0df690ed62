package backend

import (
	"fmt"
	"strings"
)

// Device is the backend a command asks for: DeviceAuto (the zero value:
// CUDA when found, else the CPU), DeviceCPU or DeviceCUDA.
type Device int

const (
	DeviceAuto Device = iota
	DeviceCPU
	DeviceCUDA
)

// Devices lists the accepted names of ParseDevice, as --device takes them.
var Devices = []string{"auto", "cpu", "cuda"}

func (d Device) String() string {
	if d < 0 || int(d) >= len(Devices) {
		return fmt.Sprintf("Device(%d)", int(d))
	}
	return Devices[d]
}

// ParseDevice reads a device's name: auto (or empty), cpu, or cuda (or
// gpu), in any case.
func ParseDevice(name string) (Device, error) {
	switch strings.ToLower(name) {
	case "", "auto":
		return DeviceAuto, nil
	case "cpu":
		return DeviceCPU, nil
	case "cuda", "gpu":
		return DeviceCUDA, nil
	}
	return 0, fmt.Errorf("unknown device %q: use one of %s", name, strings.Join(Devices, ", "))
}

// Precision is the CUDA backend's arithmetic for matrix products and
// convolutions: TF32 (the zero value; tensor cores, about 10 bits of
// mantissa), FP32, or BF16 (mixed precision: bf16 operands, 8 bits of
// mantissa, with fp32 sums, and everything else in fp32; compute
// capability 8.0 or newer). The CPU backend always computes in FP32: it
// ignores TF32 and refuses BF16.
type Precision int

const (
	TF32 Precision = iota
	FP32
	BF16
)

func (p Precision) String() string {
	switch p {
	case TF32:
		return "tf32"
	case FP32:
		return "fp32"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision reads a precision's name: tf32 (or empty), fp32 or bf16.
func ParsePrecision(name string) (Precision, error) {
	switch name {
	case "", "tf32":
		return TF32, nil
	case "fp32":
		return FP32, nil
	case "bf16":
		return BF16, nil
	}
	return 0, fmt.Errorf("unknown precision %q: use tf32, fp32 or bf16", name)
}
