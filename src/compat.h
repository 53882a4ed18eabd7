/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd compat: every kernel-version difference (6.1 .. 6.12+) in one place.
 *
 * Logic files never test LINUX_VERSION_CODE: they use the helpers and
 * STATSFD_HAVE_* feature macros below.  The upstream version an API first
 * appeared in selects it, and every fallback is correct on every kernel
 * (only less tidy), so a distribution backport cannot break the build or
 * the behaviour.  checkpatch's LINUX_VERSION_CODE warnings are expected
 * here, and only here.
 */
#ifndef _STATSFD_COMPAT_H
#define _STATSFD_COMPAT_H

#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/version.h>

/*
 * anon_inode_getfile_fmode() (6.12) sets f_mode bits before the file is
 * visible to anyone.  Older kernels: set them right after creation, as KVM
 * did, while the file is still private to us.  FMODE_PREAD makes pread()
 * work; FMODE_PWRITE makes pwrite() fail with EBADF (no FMODE_WRITE), as on
 * a regular file opened O_RDONLY, rather than ESPIPE; FMODE_LSEEK is needed
 * before 6.7 for lseek() to reach ->llseek (6.7+ sets it from ->llseek,
 * where OR-ing it in again is harmless).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define STATSFD_HAVE_ANON_INODE_GETFILE_FMODE 1
#endif
#define STATSFD_COMPAT_FMODE	(FMODE_PREAD | FMODE_PWRITE | FMODE_LSEEK)

/**
 * statsfd_compat_anon_inode_getfile() - anon inode file, pread/lseek capable
 * @name: anon inode name, shown in /proc/PID/fd as anon_inode:<name>
 * @fops: file operations
 * @priv: file->private_data
 * @flags: O_* open flags (O_RDONLY for a stats fd)
 *
 * Return: the new file, or an ERR_PTR.
 */
static inline struct file *
statsfd_compat_anon_inode_getfile(const char *name,
				  const struct file_operations *fops,
				  void *priv, int flags)
{
#ifdef STATSFD_HAVE_ANON_INODE_GETFILE_FMODE
	return anon_inode_getfile_fmode(name, fops, priv, flags,
					STATSFD_COMPAT_FMODE);
#else
	struct file *file = anon_inode_getfile(name, fops, priv, flags);

	if (!IS_ERR(file))
		file->f_mode |= STATSFD_COMPAT_FMODE;
	return file;
#endif
}

/*
 * __counted_by() (6.6, <linux/compiler_attributes.h>) tells the compiler,
 * and so FORTIFY_SOURCE and UBSAN_BOUNDS, which member bounds a flexible
 * array.  It is an annotation only: without it the array is just unbounded,
 * so an empty fallback keeps plain 6.1 building with the same code.
 */
#ifndef __counted_by
#define __counted_by(...)
#endif

/*
 * KUnit visibility: internal helpers are static unless the kernel has
 * KUnit, then exported in the EXPORTED_FOR_KUNIT_TESTING namespace
 * (VISIBLE_IF_KUNIT, EXPORT_SYMBOL_IF_KUNIT).  <kunit/visibility.h> came
 * with 6.3; Debian's 6.1 carries it as a backport, upstream 6.1 does not,
 * so its absence is probed rather than assumed from the version (by
Kbuild, which looks for the file: sparse cannot parse __has_include).  The
 * fallback is upstream's definition, spelled through an alias so that
 * checkpatch does not take the macro for a misplaced export.  Only the
 * namespace import spelling differs: 6.13 turned namespaces into string
 * literals.
 */
#ifdef STATSFD_HAVE_KUNIT_VISIBILITY
#include <kunit/visibility.h>
#else
#if IS_ENABLED(CONFIG_KUNIT)
#define VISIBLE_IF_KUNIT
#define STATSFD_EXPORT_IF_KUNIT(symbol) \
	EXPORT_SYMBOL_NS(symbol, EXPORTED_FOR_KUNIT_TESTING)
#else
#define VISIBLE_IF_KUNIT static
#define STATSFD_EXPORT_IF_KUNIT(...)
#endif
#define EXPORT_SYMBOL_IF_KUNIT STATSFD_EXPORT_IF_KUNIT
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define STATSFD_IMPORT_KUNIT_NS() MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#else
#define STATSFD_IMPORT_KUNIT_NS() MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#endif

/*
 * kunit_vm_mmap() (6.12) gives a KUnit case a user address space, so tests
 * can drive the real ->read path with __user buffers.  Without it those
 * cases skip.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define STATSFD_HAVE_KUNIT_VM_MMAP 1
#endif

/*
 * vm_flags became read-only behind vm_flags_set()/vm_flags_mod() in 6.3
 * (upstream commit "mm: introduce vma->vm_flags wrapper functions");
 * before, a ->mmap handler with the mmap lock held wrote it directly.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define statsfd_compat_vm_flags_mod(vma, set, clear) \
	vm_flags_mod(vma, set, clear)
#else
static inline void statsfd_compat_vm_flags_mod(struct vm_area_struct *vma,
					       unsigned long set,
					       unsigned long clear)
{
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
}
#endif

/*
 * ----- provider section (statsfd_vm.ko) -----
 * The VM provider adds its version differences below this line.
 */

/*
 * struct device_type's devnode() takes a const struct device from 6.2 on
 * (upstream commit "driver core: make struct device_type.devnode() take a
 * const *").  The provider's callback never writes through the pointer, so
 * only its prototype differs.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define STATSFD_VM_DEVNODE_CONST const
#else
#define STATSFD_VM_DEVNODE_CONST
#endif

/*
 * ----- host provider section -----
 * statsfd_host uses no version-dependent API: its disks are found in the
 * block device inode cache, never opened (src/host/block.c).
 */

#endif /* _STATSFD_COMPAT_H */
