# io-tests.cmake - ra-io's unit tests (geometry, backing I/O, workers),
# included by tests/unit/ra/CMakeLists.txt.  Owned by ra-io.
# test_backing_cache.c runs the backing reads on real cache/ pages.
set(afs_ra_io_tests geometry worker backing)
if(TARGET afs_cache)
	list(APPEND afs_ra_io_tests backing_cache)
endif()
foreach(t ${afs_ra_io_tests})
	if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c)
		afs_unit_test(ra_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c
			LIBS afs_ra LABELS ra)
	endif()
endforeach()
