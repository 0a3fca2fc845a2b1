# find_package(probegen <version>): the version is the Python package's own
# (probegen/__init__.py, two directories up), so it cannot drift. A newer
# release with the same major version is compatible.

file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../../__init__.py" _probegen_version_line
  REGEX "^__version__ = \"[^\"]+\"")
string(REGEX REPLACE "^__version__ = \"([^\"]+)\".*" "\\1" PACKAGE_VERSION "${_probegen_version_line}")
unset(_probegen_version_line)

if(NOT PACKAGE_VERSION)
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
else()
  string(REGEX MATCH "^[0-9]+" _probegen_major "${PACKAGE_VERSION}")
  if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION OR NOT _probegen_major STREQUAL PACKAGE_FIND_VERSION_MAJOR)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
    if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
      set(PACKAGE_VERSION_EXACT TRUE)
    endif()
  endif()
  unset(_probegen_major)
endif()
