# cache-tests.cmake - integration tests of aheadfs's own page cache and
# readahead through a real mount (issue 5), included from CMakeLists.txt.
#
# Each script sources lib.sh and cache_lib.sh; AFS_READ_MODE picks the read
# mode (kernel when unset): the key tests are registered once per mode, the
# direct one as integration/<name>_direct.
#
# afs_data_io  seeded pattern files and checked reads (sequential,
#               cooperative threads, random), getxattr size-first
add_executable(afs_data_io ahead_io.c)
target_link_libraries(afs_data_io PRIVATE Threads::Threads)

# afs_cache_test(NAME TIMEOUT [direct])
function(afs_cache_test name timeout)
	afs_script_test(${name} ${name}.sh TIMEOUT ${timeout} LABELS readpath)
	set_property(TEST integration/${name} APPEND PROPERTY ENVIRONMENT
		"AHEADFS_STAT=$<TARGET_FILE:aheadfs-stat>")
	set_property(TEST integration/${name} PROPERTY RESOURCE_LOCK
		drop_caches)
	if(ARGN STREQUAL "direct")
		afs_script_test(${name}_direct ${name}.sh TIMEOUT ${timeout}
			LABELS readpath)
		set_property(TEST integration/${name}_direct PROPERTY
			RESOURCE_LOCK drop_caches)
		set_property(TEST integration/${name}_direct APPEND PROPERTY
			ENVIRONMENT "AFS_READ_MODE=direct"
			"AHEADFS_STAT=$<TARGET_FILE:aheadfs-stat>")
	endif()
endfunction()

afs_cache_test(cache_seq 120 direct)
afs_cache_test(cache_coop 150 direct)
# The cooperative readers once more with every request through FUSE over
# io_uring (AFS_URING=1, lib.sh): the readers' reads reach the daemon from
# the queues of the CPUs they run on.
afs_script_test(cache_coop+transport=uring cache_coop.sh TIMEOUT 150
	LABELS readpath ENV AFS_URING=1 AHEADFS_STAT=$<TARGET_FILE:aheadfs-stat>)
set_property(TEST integration/cache_coop+transport=uring PROPERTY
	RESOURCE_LOCK drop_caches enable_uring)
afs_cache_test(cache_random 120 direct)
afs_cache_test(cache_advice 90 direct)
afs_cache_test(cache_bounded 180 direct)
afs_cache_test(cache_coherency 180 direct)
afs_cache_test(cache_idle 90 direct)
afs_cache_test(warm_restart 120 direct)
afs_cache_test(cache_programs 180 direct)
afs_cache_test(cache_nginx 120 direct)
afs_cache_test(cache_xattr 120)
afs_cache_test(cache_badopts 90)
afs_cache_test(cache_stat_view 120)
afs_cache_test(cache_resident 90)
