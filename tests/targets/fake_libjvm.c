/* fake_libjvm.c - built as a libjvm.so for tests/integration/java_vthreads:
 * the Serviceability Agent's exported tables (gHotSpotVM*) of a JVM that
 * has only Abstract_VM_Version::_vm_major_version (FAKE_JVM_MAJOR, read
 * at load): a JVM too old for a known layout (11), or one whose tables
 * lack what the frames need (25). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct vm_struct_entry {
	const char *type_name, *field_name, *type_string;
	int32_t is_static;
	uint64_t offset;
	void *address;
};
struct vm_type_entry {
	const char *type_name, *superclass_name;
	int32_t is_oop, is_integer, is_unsigned;
	uint64_t size;
};
struct vm_int_entry {
	const char *name;
	int32_t value;
};
struct vm_long_entry {
	const char *name;
	uint64_t value;
};

static int vm_major = 11;
static struct vm_struct_entry structs[] = {
	{ "Abstract_VM_Version", "_vm_major_version", "int", 1, 0, &vm_major },
	{ NULL, NULL, NULL, 0, 0, NULL },
};
static struct vm_type_entry types[] = { { NULL, NULL, 0, 0, 0, 0 } };
static struct vm_int_entry ints[] = { { NULL, 0 } };
static struct vm_long_entry longs[] = { { NULL, 0 } };

struct vm_struct_entry *gHotSpotVMStructs = structs;
struct vm_type_entry *gHotSpotVMTypes = types;
struct vm_int_entry *gHotSpotVMIntConstants = ints;
struct vm_long_entry *gHotSpotVMLongConstants = longs;
uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct vm_struct_entry, type_name);
uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct vm_struct_entry, field_name);
uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(struct vm_struct_entry, type_string);
uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(struct vm_struct_entry, is_static);
uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct vm_struct_entry, offset);
uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(struct vm_struct_entry, address);
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct vm_struct_entry);
uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct vm_type_entry, type_name);
uint64_t gHotSpotVMTypeEntrySuperclassNameOffset = offsetof(struct vm_type_entry, superclass_name);
uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(struct vm_type_entry, size);
uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(struct vm_type_entry);
uint64_t gHotSpotVMIntConstantEntryNameOffset = offsetof(struct vm_int_entry, name);
uint64_t gHotSpotVMIntConstantEntryValueOffset = offsetof(struct vm_int_entry, value);
uint64_t gHotSpotVMIntConstantEntryArrayStride = sizeof(struct vm_int_entry);
uint64_t gHotSpotVMLongConstantEntryNameOffset = offsetof(struct vm_long_entry, name);
uint64_t gHotSpotVMLongConstantEntryValueOffset = offsetof(struct vm_long_entry, value);
uint64_t gHotSpotVMLongConstantEntryArrayStride = sizeof(struct vm_long_entry);

__attribute__((constructor)) static void load(void)
{
	const char *v = getenv("FAKE_JVM_MAJOR");

	if (v)
		vm_major = atoi(v);
}

int fake_jvm_major(void);
int fake_jvm_major(void)
{
	return vm_major;
}
