# io-tests.cmake - ra-io's unit tests (geometry, backing I/O, workers),
# included by tests/unit/ra/CMakeLists.txt.  Owned by ra-io.
foreach(t geometry worker backing)
	if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c)
		afs_unit_test(ra_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c
			LIBS afs_ra LABELS ra)
	endif()
endforeach()
