# io-sources.cmake - ra-io's sources of afs_ra (stripe geometry, backing I/O,
# worker pool), included by ra/CMakeLists.txt.  Owned by ra-io.
foreach(src geometry.c worker.c backing.c)
	# Files land one commit at a time; each commit builds what exists.
	if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${src})
		list(APPEND AFS_RA_IO_SOURCES ${CMAKE_CURRENT_LIST_DIR}/${src})
	endif()
endforeach()
