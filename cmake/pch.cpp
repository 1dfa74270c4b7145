// The translation unit cleave_pch precompiles its headers for (cmake/precompiled_headers.cmake).
