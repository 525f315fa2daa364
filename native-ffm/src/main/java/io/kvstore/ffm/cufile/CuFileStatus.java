package io.kvstore.ffm.cufile;

import java.util.Map;

/**
 * Names of cuFile's {@code CUfileOpError} codes (cufile.h, {@code CUFILEOP_STATUS_ENTRIES}: 0 and
 * 5001..5050), so that errors say {@code CU_FILE_DRIVER_NOT_INITIALIZED} rather than 5001.
 */
final class CuFileStatus {

    /** CUFILEOP_BASE_ERR: every cuFile-specific error is above it. */
    static final int BASE = 5000;
    /** CU_FILE_CUDA_DRIVER_ERROR: the CUresult in cu_err says what went wrong. */
    static final int CUDA_DRIVER_ERROR = BASE + 11;
    /** CU_FILE_HANDLE_NOT_REGISTERED: cuFileHandleRegister refused the file (cufile.log says why). */
    static final int HANDLE_NOT_REGISTERED = BASE + 27;

    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(0, "CU_FILE_SUCCESS"),
            Map.entry(BASE + 1, "CU_FILE_DRIVER_NOT_INITIALIZED"),
            Map.entry(BASE + 2, "CU_FILE_DRIVER_INVALID_PROPS"),
            Map.entry(BASE + 3, "CU_FILE_DRIVER_UNSUPPORTED_LIMIT"),
            Map.entry(BASE + 4, "CU_FILE_DRIVER_VERSION_MISMATCH"),
            Map.entry(BASE + 5, "CU_FILE_DRIVER_VERSION_READ_ERROR"),
            Map.entry(BASE + 6, "CU_FILE_DRIVER_CLOSING"),
            Map.entry(BASE + 7, "CU_FILE_PLATFORM_NOT_SUPPORTED"),
            Map.entry(BASE + 8, "CU_FILE_IO_NOT_SUPPORTED"),
            Map.entry(BASE + 9, "CU_FILE_DEVICE_NOT_SUPPORTED"),
            Map.entry(BASE + 10, "CU_FILE_NVFS_DRIVER_ERROR"),
            Map.entry(BASE + 11, "CU_FILE_CUDA_DRIVER_ERROR"),
            Map.entry(BASE + 12, "CU_FILE_CUDA_POINTER_INVALID"),
            Map.entry(BASE + 13, "CU_FILE_CUDA_MEMORY_TYPE_INVALID"),
            Map.entry(BASE + 14, "CU_FILE_CUDA_POINTER_RANGE_ERROR"),
            Map.entry(BASE + 15, "CU_FILE_CUDA_CONTEXT_MISMATCH"),
            Map.entry(BASE + 16, "CU_FILE_INVALID_MAPPING_SIZE"),
            Map.entry(BASE + 17, "CU_FILE_INVALID_MAPPING_RANGE"),
            Map.entry(BASE + 18, "CU_FILE_INVALID_FILE_TYPE"),
            Map.entry(BASE + 19, "CU_FILE_INVALID_FILE_OPEN_FLAG"),
            Map.entry(BASE + 20, "CU_FILE_DIO_NOT_SET"),
            Map.entry(BASE + 22, "CU_FILE_INVALID_VALUE"),
            Map.entry(BASE + 23, "CU_FILE_MEMORY_ALREADY_REGISTERED"),
            Map.entry(BASE + 24, "CU_FILE_MEMORY_NOT_REGISTERED"),
            Map.entry(BASE + 25, "CU_FILE_PERMISSION_DENIED"),
            Map.entry(BASE + 26, "CU_FILE_DRIVER_ALREADY_OPEN"),
            Map.entry(BASE + 27, "CU_FILE_HANDLE_NOT_REGISTERED"),
            Map.entry(BASE + 28, "CU_FILE_HANDLE_ALREADY_REGISTERED"),
            Map.entry(BASE + 29, "CU_FILE_DEVICE_NOT_FOUND"),
            Map.entry(BASE + 30, "CU_FILE_INTERNAL_ERROR"),
            Map.entry(BASE + 31, "CU_FILE_GETNEWFD_FAILED"),
            Map.entry(BASE + 33, "CU_FILE_NVFS_SETUP_ERROR"),
            Map.entry(BASE + 34, "CU_FILE_IO_DISABLED"),
            Map.entry(BASE + 35, "CU_FILE_BATCH_SUBMIT_FAILED"),
            Map.entry(BASE + 36, "CU_FILE_GPU_MEMORY_PINNING_FAILED"),
            Map.entry(BASE + 37, "CU_FILE_BATCH_FULL"),
            Map.entry(BASE + 38, "CU_FILE_ASYNC_NOT_SUPPORTED"),
            Map.entry(BASE + 39, "CU_FILE_INTERNAL_BATCH_SETUP_ERROR"),
            Map.entry(BASE + 40, "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR"),
            Map.entry(BASE + 41, "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR"),
            Map.entry(BASE + 42, "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR"),
            Map.entry(BASE + 43, "CU_FILE_NOMEM_ERROR"),
            Map.entry(BASE + 44, "CU_FILE_IO_ERROR"),
            Map.entry(BASE + 45, "CU_FILE_INTERNAL_BUF_REGISTER_ERROR"),
            Map.entry(BASE + 46, "CU_FILE_HASH_OPR_ERROR"),
            Map.entry(BASE + 47, "CU_FILE_INVALID_CONTEXT_ERROR"),
            Map.entry(BASE + 48, "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR"),
            Map.entry(BASE + 49, "CU_FILE_BATCH_NOCOMPAT_ERROR"),
            Map.entry(BASE + 50, "CU_FILE_IO_MAX_ERROR"));

    private CuFileStatus() {}

    /** The CUfileOpError name of {@code code} (sign ignored, as cuFileRead/Write return it negated). */
    static String name(int code) {
        return NAMES.getOrDefault(Math.abs(code), "CUfileOpError " + Math.abs(code));
    }
}
