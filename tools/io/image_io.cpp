#include "tools/io/image_io.h"

#include <jpeglib.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace recon::io {
namespace {

constexpr int kMaxSide = 16384;  // refuse absurd images before allocating

Result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open image " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return invalid_argument("image " + path + " is empty");
  return bytes;
}

Result<Image> decode_png(const std::vector<uint8_t>& bytes, const std::string& path) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) {
    return invalid_argument("cannot decode PNG " + path + ": " + png.message);
  }
  if (png.width == 0 || png.height == 0 || png.width > kMaxSide || png.height > kMaxSide) {
    png_image_free(&png);
    return invalid_argument("PNG " + path + " has unsupported size");
  }
  png.format = PNG_FORMAT_RGB;
  Image img;
  img.width = static_cast<int>(png.width);
  img.height = static_cast<int>(png.height);
  img.channels = 3;
  img.pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, img.pixels.data(), 0, nullptr)) {
    std::string msg = png.message;
    png_image_free(&png);
    return invalid_argument("cannot decode PNG " + path + ": " + msg);
  }
  return img;
}

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

Result<Image> decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& path) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  Image img;
  int orientation = 1;
  // No C++ objects with destructors may be created between setjmp and the end of decoding.
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return invalid_argument("cannot decode JPEG " + path + ": " + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(&cinfo, TRUE);
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker == JPEG_APP0 + 1) orientation = exif_orientation(m->data, m->data_length);
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_width == 0 || cinfo.output_height == 0 || cinfo.output_width > kMaxSide ||
      cinfo.output_height > kMaxSide || cinfo.output_components != 3) {
    jpeg_destroy_decompress(&cinfo);
    return invalid_argument("JPEG " + path + " has unsupported size or colour layout");
  }
  img.width = static_cast<int>(cinfo.output_width);
  img.height = static_cast<int>(cinfo.output_height);
  img.channels = 3;
  img.pixels.resize(img.stride() * img.height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img.pixels.data() + img.stride() * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return orientation == 1 ? img : apply_exif_orientation(img, orientation);
}

uint32_t read_u32(const uint8_t* p, bool le) {
  return le ? (p[0] | p[1] << 8 | p[2] << 16 | uint32_t{p[3]} << 24)
            : (uint32_t{p[0]} << 24 | p[1] << 16 | p[2] << 8 | p[3]);
}
uint16_t read_u16(const uint8_t* p, bool le) {
  return le ? (p[0] | p[1] << 8) : (p[0] << 8 | p[1]);
}

}  // namespace

int exif_orientation(const uint8_t* d, size_t n) {
  // "Exif\0\0" then a TIFF header: byte order, 42, offset of IFD0; tag 0x0112 is the orientation.
  if (n < 14 || std::memcmp(d, "Exif\0\0", 6) != 0) return 1;
  const uint8_t* tiff = d + 6;
  const size_t size = n - 6;
  bool le;
  if (tiff[0] == 'I' && tiff[1] == 'I') {
    le = true;
  } else if (tiff[0] == 'M' && tiff[1] == 'M') {
    le = false;
  } else {
    return 1;
  }
  const uint32_t ifd = read_u32(tiff + 4, le);
  if (ifd > size || size - ifd < 2) return 1;
  const uint16_t count = read_u16(tiff + ifd, le);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t entry = ifd + 2 + size_t{i} * 12;
    if (entry + 12 > size) return 1;
    if (read_u16(tiff + entry, le) == 0x0112) {
      const uint16_t v = read_u16(tiff + entry + 8, le);
      return v >= 1 && v <= 8 ? v : 1;
    }
  }
  return 1;
}

Image apply_exif_orientation(const Image& in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const bool swap = orientation >= 5;
  Image out;
  out.width = swap ? in.height : in.width;
  out.height = swap ? in.width : in.height;
  out.channels = in.channels;
  out.pixels.resize(in.pixels.size());
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      // Source pixel for each orientation, following the EXIF definitions (PIL's transpose table).
      int sx = x, sy = y;
      switch (orientation) {
        case 2:
          sx = in.width - 1 - x;
          break;  // mirror horizontal
        case 3:
          sx = in.width - 1 - x;
          sy = in.height - 1 - y;
          break;  // rotate 180
        case 4:
          sy = in.height - 1 - y;
          break;  // mirror vertical
        case 5:
          sx = y;
          sy = x;
          break;  // transpose
        case 6:
          sx = y;
          sy = in.height - 1 - x;
          break;  // rotate 90 CW
        case 7:
          sx = in.width - 1 - y;
          sy = in.height - 1 - x;
          break;  // transverse
        case 8:
          sx = in.width - 1 - y;
          sy = x;
          break;  // rotate 270 CW
      }
      std::memcpy(&out.pixels[(static_cast<size_t>(y) * out.width + x) * out.channels],
                  &in.pixels[(static_cast<size_t>(sy) * in.width + sx) * in.channels], in.channels);
    }
  }
  return out;
}

Result<Image> load_rgb(const std::string& path) {
  RECON_ASSIGN_OR_RETURN(auto bytes, read_file(path));
  if (bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0) return decode_png(bytes, path);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return decode_jpeg(bytes, path);
  return invalid_argument("image " + path + " is neither PNG nor JPEG");
}

Status save_png(const std::string& path, const Image& image) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.flags = PNG_IMAGE_FLAG_FAST;
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : image.channels == 4 ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr)) {
    return unavailable("cannot write PNG " + path + ": " + png.message);
  }
  return Status::ok();
}

}  // namespace recon::io
