package cuda

import (
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"
)

// Report is what Probe found, for `simclr devices`.
type Report struct {
	SearchDirs []string
	Libraries  []LibraryReport
	Versions   Versions
	// Set is the CUDA major of the cuBLAS, cuBLASLt, NVRTC and cuDNN
	// chosen ("CUDA 12"), SetWhy the reason (the driver's major, what a
	// newer set lacked, how cuDNN's major was learnt, what was left unused).
	Set, SetWhy string
	Devices     []DeviceInfo
	// Err says why the CUDA backend cannot be used here (nil when it can).
	Err error
}

// LibraryReport is one library looked for.
type LibraryReport struct {
	Role  string   // driver, nvrtc, cublasLt, cublas, cudnn
	Names []string // file names tried
	Path  string   // where it was found, "" when it was not
}

// DeviceInfo describes one GPU.
type DeviceInfo struct {
	Index        int
	Name         string
	Major, Minor int // compute capability
	SMs          int
	TotalMem     uint64
	handle       int32
}

// Probe looks for the CUDA libraries and devices without creating a
// backend. It never fails: what is missing is in the report.
func Probe() Report {
	return probe(defaultSearchEnv())
}

func probe(env searchEnv) Report {
	search := env.search()
	r := Report{SearchDirs: search.dirs}
	libs, err := loadLibraries(env)
	set := libs.set
	if set.paths == nil {
		// The driver did not load: the set as it would be chosen, for
		// the paths reported.
		set, _ = chooseSet(search, env.root, 0)
	}
	if err == nil || set.why != "" {
		r.Set = fmt.Sprintf("CUDA %d", set.major)
		if set.major == 0 {
			r.Set = "CUDA major unknown"
		}
		r.SetWhy = set.why
	}
	for _, spec := range []libSpec{specDriver, specNvrtc, specCublasLt, specCublas, specCudnn} {
		p, ok := libs.paths[spec.role]
		if !ok {
			p, ok = set.paths[spec.role]
		}
		if !ok {
			// The driver did not load, or no consistent set exists (the
			// error lists every copy): the newest copy found.
			p, _ = locate(search, spec, "")
		}
		r.Libraries = append(r.Libraries, LibraryReport{Role: spec.role, Names: spec.names, Path: p})
	}
	if err != nil {
		r.Err = err
		if libs.driver.cuInit != 0 {
			r.Devices, _ = listDevices(&libs.driver)
		}
		return r
	}
	r.Versions = libraryVersions(libs)
	r.Devices, r.Err = listDevices(&libs.driver)
	if r.Err == nil && len(r.Devices) == 0 {
		r.Err = fmt.Errorf("cuda: the driver reports no device")
	}
	return r
}

func listDevices(d *driverAPI) ([]DeviceInfo, error) {
	if err := d.check("cuInit", mustCall(d.cuInit, 0)); err != nil {
		return nil, err
	}
	var count int32
	if err := d.check("cuDeviceGetCount", mustCall(d.cuDeviceGetCount, uintptr(unsafe.Pointer(&count)))); err != nil {
		return nil, err
	}
	var out []DeviceInfo
	for i := 0; i < int(count); i++ {
		info, err := deviceInfo(d, i)
		if err != nil {
			return out, err
		}
		out = append(out, info)
	}
	return out, nil
}

func deviceInfo(d *driverAPI, ordinal int) (DeviceInfo, error) {
	info := DeviceInfo{Index: ordinal}
	if err := d.check("cuDeviceGet", mustCall(d.cuDeviceGet, uintptr(unsafe.Pointer(&info.handle)), uintptr(ordinal))); err != nil {
		return info, err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", mustCall(d.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(info.handle))); err != nil {
		return info, err
	}
	if i := strings.IndexByte(string(name), 0); i >= 0 {
		name = name[:i]
	}
	info.Name = string(name)
	var mem uint64
	if err := d.check("cuDeviceTotalMem", mustCall(d.cuDeviceTotalMem, uintptr(unsafe.Pointer(&mem)), uintptr(info.handle))); err != nil {
		return info, err
	}
	info.TotalMem = mem
	attr := func(a int) (int, error) {
		var v int32
		err := d.check("cuDeviceGetAttribute", mustCall(d.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(info.handle)))
		return int(v), err
	}
	var err error
	if info.Major, err = attr(attrComputeCapMajor); err != nil {
		return info, err
	}
	if info.Minor, err = attr(attrComputeCapMinor); err != nil {
		return info, err
	}
	if info.SMs, err = attr(attrMultiprocessorCount); err != nil {
		return info, err
	}
	return info, nil
}

// libraryVersions asks each loaded library for its version.
func libraryVersions(l *libraries) Versions {
	var v Versions
	var drv int32
	if int32(mustCall(l.driver.cuDriverGetVersion, uintptr(unsafe.Pointer(&drv)))) == 0 { // CUresult is 32-bit
		v.Driver = fmt.Sprintf("%d.%d", drv/1000, drv%1000/10)
	}
	if l.nvrtc.version != 0 {
		maj, min := l.nvrtc.versionNumbers()
		v.NVRTC = fmt.Sprintf("%d.%d", maj, min)
	}
	if l.cublas.getProperty != 0 {
		var parts [3]int32
		for i := range parts {
			mustCall(l.cublas.getProperty, uintptr(i), uintptr(unsafe.Pointer(&parts[i])))
		}
		v.CUBLAS = fmt.Sprintf("%d.%d.%d", parts[0], parts[1], parts[2])
	}
	if l.cudnn.getVersion != 0 {
		n := int(mustCall(l.cudnn.getVersion))
		// cuDNN 9 encodes major*10000 + minor*100 + patch.
		v.CUDNN = fmt.Sprintf("%d.%d.%d", n/10000, n%10000/100, n%100)
		if c := l.cudnn.cudaVersion(); c > 0 {
			v.CUDNN += fmt.Sprintf(" for CUDA %d.%d", c/1000, c%1000/10)
		}
	}
	return v
}

// OK reports whether the CUDA backend can be opened.
func (r Report) OK() bool { return r.Err == nil && len(r.Devices) > 0 }

// String is the report as `simclr devices` prints it.
func (r Report) String() string {
	var sb strings.Builder
	sb.WriteString("CUDA libraries:\n")
	for _, l := range r.Libraries {
		where := l.Path
		if where == "" {
			where = "not found (tried " + strings.Join(l.Names, ", ") + ")"
		}
		fmt.Fprintf(&sb, "  %-9s %s\n", l.Role, where)
	}
	if r.Set != "" {
		fmt.Fprintf(&sb, "library set: %s (%s)\n", r.Set, r.SetWhy)
	}
	if r.Versions != (Versions{}) {
		fmt.Fprintf(&sb, "versions: driver %s, NVRTC %s, cuBLAS %s, cuDNN %s\n",
			orNone(r.Versions.Driver), orNone(r.Versions.NVRTC), orNone(r.Versions.CUBLAS), orNone(r.Versions.CUDNN))
	}
	if len(r.Devices) == 0 {
		sb.WriteString("GPUs: none\n")
	}
	for _, d := range r.Devices {
		fmt.Fprintf(&sb, "GPU %d: %s, compute capability %d.%d, %d SMs, %s\n", d.Index, d.Name, d.Major, d.Minor, d.SMs, human(d.TotalMem))
	}
	if r.Err != nil {
		fmt.Fprintf(&sb, "cuda unavailable: %v\n", r.Err)
	} else {
		sb.WriteString("cuda available\n")
	}
	dirs := make([]string, len(r.SearchDirs))
	for i, d := range r.SearchDirs {
		dirs[i] = filepath.Clean(d)
	}
	fmt.Fprintf(&sb, "searched (SIMCLR_CUDA_LIBS first): %s\n", strings.Join(dirs, ":"))
	return sb.String()
}

func orNone(s string) string {
	if s == "" {
		return "?"
	}
	return s
}
