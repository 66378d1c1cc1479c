//! Signs of virtualisation (hypervisor, DMI, device tree, CPU flags).

use std::path::Path;

use super::cpu::first;
use super::{read, UNKNOWN_HYPERVISOR};

/// Signs of a hypervisor: `/sys/hypervisor/type`, the DMI vendor and product,
/// the device tree, and finally the x86 `hypervisor` CPU flag.
pub(super) fn detect_virtualization(
    root: &Path,
    cpuinfo: &[(String, String)],
    dt_model: Option<&str>,
) -> Option<String> {
    if let Some(kind) = read(root, "sys/hypervisor/type") {
        return Some(match kind.as_str() {
            "xen" => "Xen".to_string(),
            _ => kind,
        });
    }
    let vendor = read(root, "sys/class/dmi/id/sys_vendor").unwrap_or_default();
    let product = read(root, "sys/class/dmi/id/product_name").unwrap_or_default();
    let bios = read(root, "sys/class/dmi/id/bios_vendor").unwrap_or_default();
    let dmi = format!("{vendor}\n{product}\n{bios}");
    // Vendors that also sell bare metal count only with a virtual product name.
    let known: &[(&str, &str)] = &[
        ("Firecracker", "Firecracker"),
        ("QEMU", "QEMU"),
        ("KVM", "KVM"),
        ("VMware", "VMware"),
        ("VirtualBox", "VirtualBox"),
        ("innotek", "VirtualBox"),
        ("Xen", "Xen"),
        ("Parallels", "Parallels"),
        ("BHYVE", "bhyve"),
        ("Google Compute Engine", "Google Compute Engine"),
        ("Cloud Hypervisor", "Cloud Hypervisor"),
    ];
    if let Some((_, name)) = known.iter().find(|(needle, _)| dmi.contains(needle)) {
        return Some(name.to_string());
    }
    if vendor.contains("Microsoft") && product.contains("Virtual Machine") {
        return Some("Hyper-V".into());
    }
    if vendor.contains("Amazon") && !product.contains("metal") {
        return Some("Amazon EC2".into());
    }
    if let Some(compat) = read(root, "proc/device-tree/hypervisor/compatible") {
        return Some(compat);
    }
    if dt_model.is_some_and(|m| m.contains("dummy-virt")) {
        return Some("QEMU".into());
    }
    let flagged =
        first(cpuinfo, "flags").is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"));
    flagged.then(|| UNKNOWN_HYPERVISOR.to_string())
}
