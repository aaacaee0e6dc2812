/* accelerated_points.cl -- the accelerated-image builtins evaluated once per coordinate
 * (qcom_ext.ext.accelerated.points, for tests and the self-test): each work-item calls
 * qcom_convolve_imagef / qcom_box_filter_imagef / qcom_block_match_sadf and _ssdf at its
 * coordinate of a buffer and writes the float4 result, so that any coordinate
 * (fractional, outside the image) can be compared with qcom_ext.reference.accelerated.
 * The builtins come from the compat header (kernels/qcom_ext.h), native or portable.
 */
__kernel void qe_convolve_at(__read_only image2d_t image, sampler_t sampler,
                             __read_only qcom_weight_image_t weights,
                             __global const float2 *coords, __global float4 *out)
{
    size_t i = get_global_id(0);
    out[i] = qcom_convolve_imagef(image, sampler, coords[i], weights);
}

__kernel void qe_box_filter_at(__read_only image2d_t image, sampler_t sampler,
                               const qcom_box_size_t size, __global const float2 *coords,
                               __global float4 *out)
{
    size_t i = get_global_id(0);
    out[i] = qcom_box_filter_imagef(image, sampler, coords[i], size);
}

__kernel void qe_block_match_at(__read_only image2d_t target, sampler_t sampler, uint2 region,
                                __read_only image2d_t reference,
                                __global const float2 *target_coords,
                                __global const uint2 *reference_coords,
                                __global float4 *sad, __global float4 *ssd)
{
    size_t i = get_global_id(0);
    sad[i] = qcom_block_match_sadf(target, sampler, target_coords[i], region, reference,
                                   reference_coords[i]);
    ssd[i] = qcom_block_match_ssdf(target, sampler, target_coords[i], region, reference,
                                   reference_coords[i]);
}
